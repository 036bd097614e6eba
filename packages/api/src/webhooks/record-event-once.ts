import { type PaymentEventWriter, recordPaymentEvents } from '@once/db/payment-events';
import { idempotencyKeys } from '@once/db/schema';
import { computeFingerprint, type Idempotency, type StoredResponse } from '@once/idempotency';
import {
  type ApplyOutcome,
  applyProcessorEvent,
  type ProcessorPaymentIntentEvent,
  type ProcessorRefund,
  type RefundMove,
  recordProcessorRefunds,
} from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import { and, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Database, Transaction } from '../database.ts';

// A processor event is applied once per event id, whoever applies it (the webhook receiver,
// or the worker's backfill of undelivered events): the event id is an idempotency key
// (tenant-scoped, operation `webhooks.processor`), and its stored answer commits in the same
// transaction as what the event moved. Applied again, it is answered from the store.

const OPERATION = 'webhooks.processor';
const POLICY = {
  // Kept a week: longer than the processor retries a delivery and than the backfill looks back.
  ttlMs: 7 * 24 * 60 * 60 * 1000,
  leaseMs: 30_000,
  // Signed by our processor and proportional to our own checkouts: the per-tenant new-key
  // limit is there to stop clients spraying keys, not to drop outcomes.
  rateLimited: false,
};

/** How long an event's once-per-id record is kept: an event applied again later is applied anew. */
export const WEBHOOK_EVENT_RECORD_TTL_MS = POLICY.ttlMs;

/** What applying an event once needs: the database and an idempotency engine over it. */
export interface WebhookEventStore {
  db: Database;
  idempotencyEngine: Idempotency<Transaction>;
}

/** The stored answer, and what this call moved when it was the one that applied the event. */
export type RecordedOnce<T> =
  | { replayed: false; response: StoredResponse; result: T }
  | { replayed: true; response: StoredResponse };

async function recordOnce<T>(
  store: WebhookEventStore,
  tenantId: string,
  event: { id: string; type: string },
  apply: (tx: Transaction) => Promise<{ result: T; body: Record<string, unknown> }>,
): Promise<RecordedOnce<T>> {
  let result: T | undefined;
  const outcome = await store.idempotencyEngine.execute(
    {
      tenantId,
      operation: OPERATION,
      key: event.id,
      fingerprint: computeFingerprint(OPERATION, { id: event.id, type: event.type }),
      policy: POLICY,
    },
    // A serialization failure or deadlock rolled the whole transaction back: run it again.
    (exec) =>
      retrySerializationFailures(() =>
        store.db.transaction(async (tx) => {
          const applied = await apply(tx);
          const response = {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ received: true, eventId: event.id, ...applied.body }),
          };
          await exec.complete(tx, response);
          result = applied.result;
          return response;
        }),
      ),
  );
  if (outcome.kind === 'replayed') return { replayed: true, response: outcome.response };
  return { replayed: false, response: outcome.response, result: result as T };
}

/**
 * Applies a PaymentIntent event, built from the processor's answer (`confirmedEventOf`),
 * once per event id (@once/payments `applyProcessorEvent`: terminal payments never move),
 * with its `webhook.*` timeline event (`via: 'backfill'` when the worker's backfill applied
 * it); applied again, the stored answer, shown in the timeline as a duplicate.
 */
export async function recordIntentEventOnce(
  store: WebhookEventStore,
  tenantId: string,
  event: { id: string; type: string },
  confirmed: ProcessorPaymentIntentEvent,
  via?: 'backfill',
): Promise<RecordedOnce<ApplyOutcome>> {
  const once = await recordOnce(store, tenantId, event, async (tx) => {
    const applied = await applyProcessorEvent(tx, tenantId, confirmed);
    await recordWebhookEvent(tx, tenantId, event, applied, false, via);
    return { result: applied, body: { outcome: applied } };
  });
  if (once.replayed) await recordDuplicate(store.db, tenantId, event, once.response.body);
  return once;
}

/**
 * Moves the payment's refunds to the statuses the processor lists for its intent
 * (@once/payments `recordProcessorRefunds`), once per event id.
 */
export function recordRefundEventOnce(
  store: WebhookEventStore,
  tenantId: string,
  event: { id: string; type: string },
  paymentId: string,
  listed: readonly ProcessorRefund[],
): Promise<RecordedOnce<RefundMove[]>> {
  return recordOnce(store, tenantId, event, async (tx) => {
    const moved = await recordProcessorRefunds(tx, tenantId, paymentId, listed);
    return { result: moved, body: { moved } };
  });
}

/**
 * The ids among `eventIds` whose answer is stored for the tenant: applied already (a
 * delivery the processor still counts as undelivered, as Stripe does after a backfill).
 */
export async function eventsAppliedOnce(
  db: Database,
  tenantId: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await db
    .select({ key: idempotencyKeys.key })
    .from(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.tenantId, tenantId),
        eq(idempotencyKeys.operation, OPERATION),
        inArray(idempotencyKeys.key, [...eventIds]),
        eq(idempotencyKeys.state, 'completed'),
        // Past its retention a record no longer answers: the event would be applied anew.
        gt(idempotencyKeys.expiresAt, sql`now()`),
      ),
    );
  return new Set(rows.map((row) => row.key));
}

/** Applied again: shown in the timeline, never an error. */
async function recordDuplicate(
  db: Database,
  tenantId: string,
  event: { id: string; type: string },
  storedBody: string | null,
): Promise<void> {
  try {
    const stored = JSON.parse(storedBody ?? '{}') as { outcome?: ApplyOutcome };
    if (stored.outcome) await recordWebhookEvent(db, tenantId, event, stored.outcome, true);
  } catch {
    // Timeline only.
  }
}

/**
 * Records what a processor webhook did to a payment, as an arrow from the processor's lane
 * to the webhook receiver's: `webhook.applied` (it moved the payment), `webhook.ignored` (the
 * payment was already terminal, or the amount differs), `webhook.duplicate` (a redelivery
 * answered from the stored answer). Called in the transaction that applied it; a duplicate is
 * recorded where its stored answer is given. No payment, no event. `via: 'backfill'`: the
 * worker applied it from the processor's list of undelivered events, not from a delivery.
 */
async function recordWebhookEvent(
  db: PaymentEventWriter,
  tenantId: string,
  event: { id: string; type: string },
  outcome: ApplyOutcome,
  duplicate: boolean,
  via?: 'backfill',
): Promise<void> {
  if (outcome.kind === 'payment_not_found' || !outcome.paymentId) return;
  const kind = duplicate
    ? 'webhook.duplicate'
    : outcome.kind === 'applied'
      ? 'webhook.applied'
      : 'webhook.ignored';
  await recordPaymentEvents(db, [
    {
      tenantId,
      paymentId: outcome.paymentId,
      actor: 'processor',
      kind,
      detail: {
        to: 'webhook',
        eventId: event.id,
        type: event.type,
        outcome: outcome.kind,
        ...('status' in outcome ? { status: outcome.status } : {}),
        ...(via ? { via } : {}),
      },
    },
  ]);
}
