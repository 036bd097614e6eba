import { runStatement, type SqlRunner } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import type { MoneyActionKind } from '../schema/money-action-keys.ts';
import { OUTBOX_NOTIFY_CHANNEL, type OutboxJobKind } from '../schema/outbox.ts';
import type { OutboxJobPayloads } from './job-kinds.ts';

/** A job to enqueue; its payload is the one its kind carries. */
export type NewOutboxJob = {
  [K in OutboxJobKind]: {
    tenantId: string;
    id: string;
    kind: K;
    paymentId: string;
    /** The downstream Idempotency-Key every attempt of this job sends. */
    downstreamKey: string;
    payload: OutboxJobPayloads[K];
    /** Claims before the dead letter; the table's default (8) when absent. */
    maxAttempts?: number;
  };
}[OutboxJobKind];

/** What every enqueue NOTIFYs on `OUTBOX_NOTIFY_CHANNEL`. A wake-up only: the claim decides. */
interface OutboxNotification {
  tenantId: string;
  jobId: string;
}

export interface EnqueueOptions {
  /**
   * NOTIFY the dispatchers (default true). False on engines and poolers without
   * LISTEN/NOTIFY: the dispatchers' poll finds the job (docs/decisions/0011-distributed-sql.md).
   */
  notify?: boolean;
}

/**
 * Inserts a `pending` job and NOTIFYs the dispatchers, on either driver. Call it in the
 * transaction that makes the job's reason true (the payment, the reconciler's decision):
 * NOTIFY is transactional, so listeners hear it only if that commits.
 */
export async function enqueueOutboxJob(
  db: SqlRunner,
  job: NewOutboxJob,
  options: EnqueueOptions = {},
): Promise<void> {
  await runStatement(
    db,
    sql`insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload, max_attempts)
    values (${job.tenantId}, ${job.id}, ${job.kind}, ${job.paymentId}, ${job.downstreamKey},
            ${JSON.stringify(job.payload)}::text::jsonb,
            ${job.maxAttempts === undefined ? sql`default` : job.maxAttempts})`,
  );
  if (options.notify === false) return;
  const notification: OutboxNotification = { tenantId: job.tenantId, jobId: job.id };
  await runStatement(
    db,
    sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${JSON.stringify(notification)})`,
  );
}

/** The outbox job of a capture, void or refund, with the payload its handler reads. */
export function moneyMoveJob(
  job: { tenantId: string; id: string; paymentId: string; downstreamKey: string },
  kind: MoneyActionKind,
  targetId: string,
  amount: number | null,
): NewOutboxJob {
  if (kind === 'refund') return { ...job, kind: 'refund_payment', payload: { refundId: targetId } };
  if (kind === 'void') return { ...job, kind: 'void_payment', payload: { actionId: targetId } };
  const payload = { actionId: targetId, ...(amount ? { amountToCapture: amount } : {}) };
  return { ...job, kind: 'capture_payment', payload };
}
