import { and, desc, eq, sql } from 'drizzle-orm';
import type { Hono } from 'hono';
import type { ProcessorDatabase } from '../db/client.ts';
import { webhookEvents } from '../db/schema/index.ts';
import {
  resendEvent,
  WEBHOOK_MAX_ATTEMPTS,
  type WebhookTarget,
} from '../webhooks/webhook-deliverer.ts';
import { AdminError, readAdminLimit } from './admin-error.ts';

type WebhookEventRow = typeof webhookEvents.$inferSelect;

/**
 * Where an event stands, in the Stripe Dashboard's words: `delivered` (a 2xx came back),
 * `pending` (not yet, or a retry is scheduled at `next_attempt_at`), `failed` (every
 * automatic attempt failed; only a resend sends it again).
 */
function deliveryStatus(row: WebhookEventRow): 'delivered' | 'pending' | 'failed' {
  if (row.deliveredAt) return 'delivered';
  return row.attempts >= WEBHOOK_MAX_ATTEMPTS ? 'failed' : 'pending';
}

function renderWebhookEvent(row: WebhookEventRow) {
  const status = deliveryStatus(row);
  return {
    id: row.id,
    account: row.accountId,
    type: row.type,
    status,
    attempts: row.attempts,
    deliveries: row.deliveries,
    delivered_at: row.deliveredAt?.toISOString() ?? null,
    next_attempt_at: status === 'pending' ? row.nextAttemptAt.toISOString() : null,
    last_status: row.lastStatus,
    last_error: row.lastError,
    created: row.createdAt.toISOString(),
    event: JSON.parse(row.payload),
  };
}

// Events written in one transaction share `created_at`; the id breaks the tie, so `limit`
// keeps the same newest events the full list ends with.

/** The PaymentIntent an event is about: its object's own id, or the intent of a charge or refund. */
const eventIntent = sql<string>`coalesce(
  ${webhookEvents.payload}::jsonb #>> '{data,object,payment_intent}',
  ${webhookEvents.payload}::jsonb #>> '{data,object,id}')`;

/** The webhook outbox under `/admin`: list (`limit` keeps the newest, shown oldest first) and resend. */
export function registerWebhookEventRoutes(
  app: Hono,
  {
    db,
    webhook,
    log,
  }: { db: ProcessorDatabase; webhook: WebhookTarget; log: (line: string) => void },
): void {
  app.get('/admin/webhook-events', async (c) => {
    const account = c.req.query('account');
    const type = c.req.query('type');
    const paymentIntent = c.req.query('payment_intent');
    const limit = readAdminLimit(c.req.query('limit'));
    const where = and(
      account ? eq(webhookEvents.accountId, account) : undefined,
      type ? eq(webhookEvents.type, type) : undefined,
      paymentIntent ? eq(eventIntent, paymentIntent) : undefined,
    );
    const newestFirst = await db
      .select()
      .from(webhookEvents)
      .where(where)
      .orderBy(desc(webhookEvents.createdAt), desc(webhookEvents.id))
      .limit(limit ?? Number.MAX_SAFE_INTEGER);
    return c.json({ data: newestFirst.reverse().map(renderWebhookEvent) });
  });

  app.post('/admin/webhook-events/:id/resend', async (c) => {
    const id = c.req.param('id');
    const text = await c.req.text();
    const body = (text.trim() === '' ? {} : JSON.parse(text)) as { account?: unknown };
    if (body.account !== undefined && typeof body.account !== 'string') {
      throw new AdminError(400, 'account must be a string.');
    }
    const attempt = await resendEvent(db, webhook, {
      id,
      ...(body.account ? { accountId: body.account } : {}),
    });
    if (!attempt) throw new AdminError(404, `No such webhook event: ${id}.`);
    const [row] = await db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
    log(`admin: resent ${id} -> ${attempt.status ?? attempt.error}`);
    return c.json({
      delivered: attempt.error === null,
      status: attempt.status,
      error: attempt.error,
      webhook_event: renderWebhookEvent(row!),
    });
  });
}
