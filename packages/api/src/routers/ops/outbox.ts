import { outboxJobs } from '@once/db/schema';
import { desc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import { isoTimes } from './iso-times.ts';
import type { OpsListInput } from './list.types.ts';

/** The tenant's latest outbox jobs: what the workers have claimed, retried or given up on. */
export async function listOutboxJobs({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: OpsListInput;
}) {
  const rows = await ctx.db
    .select()
    .from(outboxJobs)
    .where(eq(outboxJobs.tenantId, ctx.tenantId))
    .orderBy(desc(outboxJobs.createdAt), desc(outboxJobs.id))
    .limit(input.limit);
  // The list leaves out the payload and the claim's `lock_token`.
  return rows.map(({ id, tenantId, payload, lockToken, ...row }) => ({
    jobId: id,
    ...isoTimes(row),
  }));
}
