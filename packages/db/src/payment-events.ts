import { runStatement, type SqlRunner } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';

/**
 * What happened in a payment's life. The kinds, by the process that records them:
 * - web: `pay.attempt` (a browser or API attempt reached the server, with its key and whether
 *   it was answered as a replay), `payment.committed` (payment, outbox job and the key's
 *   stored response committed together), `operator.attempt` (an operator's capture, void or
 *   refund request reached the server, with its key and how it was answered), `chaos.pressed`
 *   (a demo switch killed or paused the worker charging it: where the worker stopped);
 * - worker: `job.claimed` (which worker, lease takeover), `processor.call` (one call with its
 *   downstream key and result), `intent.recorded`, `outcome.recorded`, `job.finished` (a job
 *   that ended without calling the processor: its payment was already settled, e.g. by a
 *   webhook that arrived before the retry);
 * - webhook: `webhook.applied`, `webhook.ignored`, `webhook.duplicate`;
 * - reconciler: `reconciler.decided`.
 */
export const paymentEventKinds = [
  'pay.attempt',
  'payment.committed',
  'operator.attempt',
  'chaos.pressed',
  'job.claimed',
  'processor.call',
  'intent.recorded',
  'outcome.recorded',
  'job.finished',
  'webhook.applied',
  'webhook.ignored',
  'webhook.duplicate',
  'reconciler.decided',
] as const;
export type PaymentEventKind = (typeof paymentEventKinds)[number];

/** One fact to record. `actor`: `browser`, `web`, `worker:<id>`, `processor`, `webhook`, `reconciler`. */
export interface PaymentEventInput {
  tenantId: string;
  paymentId: string;
  actor: string;
  kind: PaymentEventKind;
  /** Small JSON: keys, outcomes, ids. `to` names the lane a call goes to (draws an arrow). */
  detail?: Record<string, unknown>;
}

/** A postgres.js pool or transaction (the worker), or a drizzle transaction (web, api). */
export type PaymentEventWriter = SqlRunner;

/**
 * Records events with ONE insert on the caller's connection. Call it inside the transaction
 * that makes the facts true: if that transaction rolls back, no event remains, so the
 * timeline never tells of something that did not happen. The single writer of
 * `payment_events`, used by the web, the worker, the webhook receiver and the reconciler.
 */
export async function recordPaymentEvents(
  db: PaymentEventWriter,
  events: readonly PaymentEventInput[],
): Promise<void> {
  if (events.length === 0) return;
  const json = JSON.stringify(
    events.map((event) => ({
      tenant_id: event.tenantId,
      payment_id: event.paymentId,
      actor: event.actor,
      kind: event.kind,
      detail: event.detail ?? {},
    })),
  );
  // One statement for any number of events. The JSON travels as text and is cast in SQL:
  // postgres.js would JSON-encode a string bound to a jsonb parameter a second time.
  await runStatement(
    db,
    sql`insert into payment_events (tenant_id, payment_id, actor, kind, detail)
    select e.value->>'tenant_id', e.value->>'payment_id', e.value->>'actor', e.value->>'kind',
           coalesce(e.value->'detail', '{}'::jsonb)
    from jsonb_array_elements(${json}::text::jsonb) with ordinality as e(value, n)
    order by e.n`,
  );
}

/** The lane of a worker process in the timeline: `worker:<WORKER_ID>`. */
export function workerActor(workerId: string): string {
  return `worker:${workerId}`;
}
