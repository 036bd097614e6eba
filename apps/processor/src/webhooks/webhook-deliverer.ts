import { createHmac } from 'node:crypto';
import { msInterval } from '@once/postgres/sql';
import { and, eq, sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { ProcessorDatabase } from '../db/client.ts';
import { webhookEvents } from '../db/schema/index.ts';
import { takeDeliveryFaults } from '../faults/apply-faults.ts';

/** Where the processor's one webhook endpoint is and how its events are signed. */
export interface WebhookTarget {
  url: string;
  secret: string;
}

/** After this many failed attempts an event is left undelivered: `failed` in /admin. */
export const WEBHOOK_MAX_ATTEMPTS = 30;

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
  target: WebhookTarget;
  log: (line: string) => void;
  /** First retry delay; doubles per attempt up to {@link MAX_BACKOFF_MS}. */
  backoffMs: number;
}) {
  const { target } = options;
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
    await faults.afterSend();
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

/** What the endpoint answered one POST: its status (null: no answer) and why (null on a 2xx). */
type PostResult = { status: number | null; error: string | null };

/**
 * POSTs one event's frozen payload to the endpoint, signed now, as Stripe sends it. Never
 * throws: a refused connection or a timeout is a failed attempt like a 500.
 */
async function postEvent(target: WebhookTarget, payload: string): Promise<PostResult> {
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'stripe-signature': signPayload(payload, target.secret),
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      },
      body: payload,
      // Each attempt gives up after 10 s.
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer().catch(() => {});
    return { status: response.status, error: response.ok ? null : `HTTP ${response.status}` };
  } catch (error) {
    return {
      status: null,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}

/**
 * Stripe's documented webhook signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<payload>" keyed by the endpoint secret>`. Verifiable with the official SDK's
 * `stripe.webhooks.constructEvent(payload, header, secret)`.
 */
export function signPayload(
  payload: string,
  secret: string,
  timestamp = Math.floor(Date.now() / 1000),
): string {
  const signature = createHmac('sha256', secret)
    .update(`${timestamp}.${payload}`, 'utf8')
    .digest('hex');
  return `t=${timestamp},v1=${signature}`;
}
