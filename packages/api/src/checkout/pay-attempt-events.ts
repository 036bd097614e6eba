import {
  type PaymentEventInput,
  type PaymentEventWriter,
  recordPaymentEvents,
} from '@once/db/payment-events';

/**
 * The idempotency operation `pay` is guarded as, per door: the checkout page (tRPC), the REST
 * and the GraphQL API. Each has its own key rows; the payment is unique per key across them.
 */
export const PAY_OPERATIONS = {
  trpc: 'checkout.pay',
  rest: 'payments.create',
  graphql: 'graphql.checkout.pay',
} as const;

/** Which door a checkout attempt came through. */
export type PayTransport = keyof typeof PAY_OPERATIONS;

/** The lane of whoever sent the attempt: the shopper's browser, or a merchant's API client. */
function attemptActor(transport: PayTransport): string {
  return transport === 'trpc' ? 'browser' : 'api_client';
}

export interface PayAttempt {
  tenantId: string;
  paymentId: string;
  key: string;
  transport: PayTransport;
}

/**
 * The events of an attempt that made a new payment: the attempt (an arrow to the web lane) and
 * the commit of payment, outbox job and stored response. Recorded with ONE insert inside the
 * pay transaction, the only write the timeline adds to a first request.
 *
 * @example
 * await recordPaymentEvents(tx, createdPaymentEvents(attempt, { job: jobId, downstreamKey }));
 */
export function createdPaymentEvents(
  attempt: PayAttempt,
  commit: { job: string; downstreamKey: string; amount: number; currency: string },
): PaymentEventInput[] {
  const { tenantId, paymentId } = attempt;
  return [
    {
      tenantId,
      paymentId,
      actor: attemptActor(attempt.transport),
      kind: 'pay.attempt',
      detail: { to: 'web', key: attempt.key, transport: attempt.transport, replayed: false },
    },
    {
      tenantId,
      paymentId,
      actor: 'web',
      kind: 'payment.committed',
      detail: { ...commit, keyState: 'completed', status: 'processing' },
    },
  ];
}

/**
 * Records an attempt answered as a replay. `source`: `payment` when `pay` found the payment
 * of this key (written in its transaction), `stored_response` when the idempotency guard
 * answered from the key's stored response without running `pay` (written where that answer is
 * given, on its own: a replay changes nothing else).
 *
 * @example
 * await recordReplayedAttempt(db, { tenantId, paymentId, key, transport: 'trpc' }, 'stored_response');
 */
export async function recordReplayedAttempt(
  db: PaymentEventWriter,
  attempt: PayAttempt,
  source: 'payment' | 'stored_response',
): Promise<void> {
  await recordPaymentEvents(db, [
    {
      tenantId: attempt.tenantId,
      paymentId: attempt.paymentId,
      actor: attemptActor(attempt.transport),
      kind: 'pay.attempt',
      detail: {
        to: 'web',
        key: attempt.key,
        transport: attempt.transport,
        replayed: true,
        source,
      },
    },
  ]);
}

/**
 * What every transport's idempotency guard tells through its `onAnswered` hook (the fields
 * `pay` needs of it).
 */
export interface GuardAnswer {
  outcome: 'executed' | 'replayed';
  tenantId: string;
  operation: string;
  key: string;
}

/**
 * The guards' `onAnswered` for `pay`, one for tRPC, REST and GraphQL: a guarded `pay` the guard
 * answered from the key's stored response (`pay` did not run, so it could not record it) still
 * shows on the payment's timeline. `paymentOf` reads the answer's payment as its transport
 * carries it, only for a replay; without a `paymentId` (a stored refusal, a GraphQL document
 * that did not select it) nothing is recorded, and answers of other operations are ignored.
 * The guard contains what this throws: a lost timeline entry never turns a replay into an error.
 *
 * @example
 * onAnswered: (answer, ctx) => recordGuardReplay(ctx.db, answer, () => answer.data)
 */
export async function recordGuardReplay(
  db: PaymentEventWriter,
  answer: GuardAnswer,
  paymentOf: () => unknown,
): Promise<void> {
  const transport = payTransportOf(answer.operation);
  if (answer.outcome !== 'replayed' || !transport) return;
  const paymentId = (paymentOf() as { paymentId?: unknown } | null | undefined)?.paymentId;
  if (typeof paymentId !== 'string') return;
  await recordReplayedAttempt(
    db,
    { tenantId: answer.tenantId, paymentId, key: answer.key, transport },
    'stored_response',
  );
}

function payTransportOf(operation: string): PayTransport | undefined {
  const found = Object.entries(PAY_OPERATIONS).find(([, name]) => name === operation);
  return found?.[0] as PayTransport | undefined;
}
