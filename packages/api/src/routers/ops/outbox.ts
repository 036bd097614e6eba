import { type OutboxJobKind, type OutboxJobStatus, outboxJobs } from '@once/db/schema';
import { desc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import type { OpsListInput } from './list.types.ts';

export interface OpsOutboxJob {
  jobId: string;
  kind: OutboxJobKind;
  paymentId: string;
  downstreamKey: string;
  status: OutboxJobStatus;
  attempts: number;
  maxAttempts: number;
  runAfter: string;
  lockedBy: string | null;
  lockedUntil: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * The tenant's latest outbox jobs: what the workers have claimed, retried or given up on.
 *
 * @example
 * const jobs = await listOutboxJobs({ ctx: { db, tenantId }, input: { limit: 20 } });
 */
export async function listOutboxJobs({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: OpsListInput;
}): Promise<OpsOutboxJob[]> {
  const rows = await ctx.db
    .select()
    .from(outboxJobs)
    .where(eq(outboxJobs.tenantId, ctx.tenantId))
    .orderBy(desc(outboxJobs.createdAt), desc(outboxJobs.id))
    .limit(input.limit);
  return rows.map((row) => ({
    jobId: row.id,
    kind: row.kind,
    paymentId: row.paymentId,
    downstreamKey: row.downstreamKey,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    runAfter: row.runAfter.toISOString(),
    lockedBy: row.lockedBy,
    lockedUntil: row.lockedUntil?.toISOString() ?? null,
    lastError: row.lastError,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }));
}
