import { sql } from 'drizzle-orm';
import type { ProcessorTransaction } from '../db/client.ts';
import { webhookEvents } from '../db/schema/index.ts';
import { newObjectId } from '../stripe/stripe-operation.ts';

export type WebhookEventType =
  | 'payment_intent.succeeded'
  | 'payment_intent.payment_failed'
  | 'payment_intent.canceled'
  | 'payment_intent.amount_capturable_updated'
  | 'payment_intent.requires_action'
  | 'charge.captured'
  | 'charge.refunded'
  | 'refund.created'
  | 'refund.updated'
  | 'refund.failed';

/** The Stripe API version stamped on events (the version stripe@23 pins). */
const EVENT_API_VERSION = '2026-10-28.endive';

/**
 * Every event `tx` writes carries `request.id`; events of no API request carry a null one,
 * which Stripe documents as "the event was automatic".
 */
export async function markEventRequest(tx: ProcessorTransaction, requestId: string): Promise<void> {
  await tx.execute(sql`select set_config('once.request_id', ${requestId}, true)`);
}

/**
 * Inside the caller's transaction: the event exists exactly when its change committed. The
 * payload is frozen here, so redeliveries send identical bytes under the same `evt_` id.
 */
export async function enqueueEvent(
  tx: ProcessorTransaction,
  input: {
    accountId: string;
    type: WebhookEventType;
    object: Record<string, unknown>;
    idempotencyKey: string | null;
  },
): Promise<string> {
  const id = newObjectId('evt');
  const [request] = await tx.execute<{ id: string | null }>(
    sql`select nullif(current_setting('once.request_id', true), '') as id`,
  );
  const event = {
    id,
    object: 'event',
    // Stripe sets `account` on Connect events; here it tells the receiver which tenant.
    account: input.accountId,
    api_version: EVENT_API_VERSION,
    created: Math.floor(Date.now() / 1000),
    data: { object: input.object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: request?.id ?? null, idempotency_key: input.idempotencyKey },
    type: input.type,
  };
  await tx.insert(webhookEvents).values({
    id,
    accountId: input.accountId,
    type: input.type,
    payload: JSON.stringify(event, null, 2),
  });
  await tx.execute(sql`select pg_notify('processor_webhooks', '')`);
  return id;
}
