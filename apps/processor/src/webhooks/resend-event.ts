import { and, eq, sql } from 'drizzle-orm';
import type { ProcessorDatabase } from '../db/client.ts';
import { webhookEvents } from '../db/schema/index.ts';
import { type PostResult, postEvent } from './post-event.ts';
import type { WebhookTarget } from './webhook-target.ts';

/**
 * Sends the SAME event again now (its `evt_` id and frozen payload, freshly signed), as the
 * Dashboard's "Resend" does, recorded like a delivery; injected webhook faults do not apply.
 * Undefined when no event has that id (in `accountId`, when given).
 */
export async function resendEvent(
  db: ProcessorDatabase,
  target: WebhookTarget,
  event: { id: string; accountId?: string },
): Promise<PostResult | undefined> {
  const [row] = await db
    .select({ payload: webhookEvents.payload })
    .from(webhookEvents)
    .where(
      and(
        eq(webhookEvents.id, event.id),
        event.accountId ? eq(webhookEvents.accountId, event.accountId) : undefined,
      ),
    );
  if (!row) return undefined;
  const attempt = await postEvent(target, row.payload);
  const delivered = attempt.error === null;
  await db.execute(sql`
    update ${webhookEvents}
    set attempts = attempts + 1, last_status = ${attempt.status}, last_error = ${attempt.error},
        deliveries = deliveries + ${delivered ? 1 : 0},
        delivered_at = ${delivered ? sql`coalesce(delivered_at, now())` : sql`delivered_at`}
    where id = ${event.id}`);
  return attempt;
}
