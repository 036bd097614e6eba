import {
  type PaymentEventInput,
  type PaymentEventWriter,
  recordPaymentEvents,
} from '@once/db/payment-events';

/** Which door a checkout attempt came through: the checkout page (tRPC), the REST or the GraphQL API. */
export type PayTransport = 'trpc' | 'rest' | 'graphql';

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
