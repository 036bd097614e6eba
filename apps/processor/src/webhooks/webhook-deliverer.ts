import { msInterval } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { ProcessorDatabase } from '../db/client.ts';
import { webhookEvents } from '../db/schema/index.ts';
import { takeDeliveryFaults } from '../faults/apply-faults.ts';
import { type PostResult, postEvent } from './post-event.ts';
import { WEBHOOK_MAX_ATTEMPTS } from './webhook-target.ts';

type ClaimedEvent = {
  id: string;
  account_id: string;
  type: string;
  payload: string;
  attempts: number;
};

const CLAIM_BATCH = 10;
const POLL_MS = 500;
const MAX_BACKOFF_MS = 300_000;

/**
 * Delivers the webhook outbox under leases (`FOR UPDATE SKIP LOCKED`, so instances share the
 * work), retrying with backoff: at-least-once with a stable `evt_` id receivers deduplicate on.
 */
export function startWebhookDeliverer(options: {
  db: ProcessorDatabase;
  /** For LISTEN: a committed event wakes the deliverer at once; polling is the fallback. */
  sql: postgres.Sql;
  url: string;
  secret: string;
  log: (line: string) => void;
  /** First retry delay; doubles per attempt up to {@link MAX_BACKOFF_MS}. */
  backoffMs: number;
}) {
  const target = { url: options.url, secret: options.secret };
  let stopped = false;
  let wake: () => void = () => {};
  let listener: { unlisten(): Promise<void> } | undefined;

  options.sql
    .listen('processor_webhooks', () => wake())
    .then((l) => {
      listener = l;
    })
    .catch((error) => options.log(`webhooks: LISTEN failed, polling only: ${String(error)}`));

  const claim = async (): Promise<ClaimedEvent[]> => {
    // The lease covers the slowest delivery (slow_webhook delay + timeout) with margin.
    const rows = await options.db.execute<ClaimedEvent>(sql`
      update ${webhookEvents}
      set locked_until = now() + interval '2 minutes', attempts = attempts + 1
      where id in (
        select id from ${webhookEvents}
        where delivered_at is null and next_attempt_at <= now()
          and (locked_until is null or locked_until < now()) and attempts < ${WEBHOOK_MAX_ATTEMPTS}
        order by next_attempt_at
        limit ${CLAIM_BATCH}
        for update skip locked
      )
      returning id, account_id, type, payload, attempts`);
    return [...rows];
  };

  const deliver = async (event: ClaimedEvent): Promise<void> => {
    const faults = await takeDeliveryFaults(
      options.db,
      { accountId: event.account_id, eventId: event.id, eventType: event.type },
      options.log,
    );
    await faults.beforeSend();
    const { copies } = faults;
    let succeeded = 0;
    let last: PostResult = { status: null, error: null };
    for (let i = 0; i < copies; i++) {
      last = await postEvent(target, event.payload);
      if (last.error === null) succeeded++;
    }
    await faults.afterSend(copies);
    if (succeeded > 0) {
      await options.db.execute(sql`
        update ${webhookEvents}
        set delivered_at = now(), deliveries = deliveries + ${succeeded}, locked_until = null,
            last_status = ${last.status}, last_error = null
        where id = ${event.id}`);
      options.log(
        `webhooks: delivered ${event.type} ${event.id} (attempt ${event.attempts}${copies > 1 ? `, sent ${copies}x` : ''})`,
      );
      return;
    }
    const retryIn = Math.min(MAX_BACKOFF_MS, options.backoffMs * 2 ** (event.attempts - 1));
    await options.db.execute(sql`
      update ${webhookEvents}
      set next_attempt_at = now() + ${msInterval(retryIn)}, locked_until = null,
          last_status = ${last.status}, last_error = ${last.error}
      where id = ${event.id}`);
    options.log(
      `webhooks: ${event.type} ${event.id} attempt ${event.attempts} failed (${last.error}); retry in ${retryIn} ms`,
    );
  };

  const loop = (async () => {
    while (!stopped) {
      let claimed: ClaimedEvent[] = [];
      try {
        claimed = await claim();
        await Promise.all(claimed.map(deliver));
      } catch (error) {
        if (!stopped) options.log(`webhooks: delivery loop error: ${String(error)}`);
      }
      if (claimed.length === CLAIM_BATCH || stopped) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();

  return {
    async stop() {
      stopped = true;
      wake();
      await loop;
      await listener?.unlisten().catch(() => {});
    },
  };
}
