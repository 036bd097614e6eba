import {
  type PaymentEventInput,
  type PaymentEventWriter,
  recordPaymentEvents,
} from '@once/db/payment-events';
import type { Queryable } from '../database.ts';
import { findPaymentByIdempotencyKey } from './existing-payment.ts';

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

export interface PayAttempt {
  tenantId: string;
  paymentId: string;
  key: string;
  transport: PayTransport;
}

/**
 * A `pay.attempt`: an arrow to the web lane from whoever sent it (the shopper's browser, or a
 * merchant's API client).
 */
function payAttemptEvent(attempt: PayAttempt, detail: Record<string, unknown>): PaymentEventInput {
  return {
    tenantId: attempt.tenantId,
    paymentId: attempt.paymentId,
    actor: attempt.transport === 'trpc' ? 'browser' : 'api_client',
    kind: 'pay.attempt',
    detail: { to: 'web', key: attempt.key, transport: attempt.transport, ...detail },
  };
}

/**
 * The events of an attempt that made a new payment: the attempt (an arrow to the web lane) and
 * the commit of payment, outbox job and stored response. Recorded with ONE insert inside the
 * pay transaction, the only write the timeline adds to a first request.
 */
export function createdPaymentEvents(
  attempt: PayAttempt,
  commit: { job: string; downstreamKey: string; amount: number; currency: string },
): PaymentEventInput[] {
  return [
    payAttemptEvent(attempt, { replayed: false }),
    {
      tenantId: attempt.tenantId,
      paymentId: attempt.paymentId,
      actor: 'web',
      kind: 'payment.committed',
      detail: { ...commit, keyState: 'completed', status: 'processing' },
    },
  ];
}

/**
 * Records an attempt answered as a replay: `payment` when `pay` found the key's payment,
 * `stored_response` when the guard answered from the stored response without running `pay`.
 */
export async function recordReplayedAttempt(
  db: PaymentEventWriter,
  attempt: PayAttempt,
  source: 'payment' | 'stored_response',
): Promise<void> {
  await recordPaymentEvents(db, [payAttemptEvent(attempt, { replayed: true, source })]);
}

/**
 * What every transport's idempotency guard tells through its `onAnswered` hook (the fields
 * `pay` needs of it).
 */
export interface GuardAnswer {
  outcome: 'executed' | 'replayed' | 'refused';
  tenantId: string;
  operation: string;
  key: string;
  /** A refused answer's code: `idempotency_key_in_use`, `idempotency_key_reused`, ... */
  refusal?: string;
}

/**
 * The guards' `onAnswered` for `pay`: a replay or a 409/422 that `pay` never saw still shows on
 * the payment's timeline as a `pay.attempt` (nothing without a payment to name). The guard
 * contains what this throws: a lost timeline entry never turns an answer into an error.
 */
export async function recordGuardAnswer(
  db: Queryable,
  answer: GuardAnswer,
  paymentOf: () => unknown,
): Promise<void> {
  const transport = payTransportOf(answer.operation);
  if (!transport) return;
  const { tenantId, key } = answer;
  if (answer.outcome === 'refused') {
    const payment = await findPaymentByIdempotencyKey(db, tenantId, key);
    if (!payment) return;
    const attempt = { tenantId, paymentId: payment.id, key, transport };
    await recordPaymentEvents(db, [
      payAttemptEvent(attempt, { replayed: false, answer: answer.refusal ?? null }),
    ]);
    return;
  }
  if (answer.outcome !== 'replayed') return;
  const paymentId = (paymentOf() as { paymentId?: unknown } | null | undefined)?.paymentId;
  if (typeof paymentId !== 'string') return;
  await recordReplayedAttempt(db, { tenantId, paymentId, key, transport }, 'stored_response');
}

function payTransportOf(operation: string): PayTransport | undefined {
  const found = Object.entries(PAY_OPERATIONS).find(([, name]) => name === operation);
  return found?.[0] as PayTransport | undefined;
}
