import { enqueueOutboxJob, isLiveJob, moneyMoveJob } from '@once/db/outbox';
import { newJobId } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';

interface Unanswered {
  tenant_id: string;
  id: string;
  payment_id: string;
  kind: 'capture' | 'void' | 'refund';
  amount: number | null;
  downstream_key: string;
}

/**
 * The reconciler's pass over captures, voids and refunds left `unknown` (their job ran out of
 * attempts on ambiguous answers): each one idle for `olderThanMs` with no live job gets a new
 * job with its SAME downstream key. Its handler asks the processor first (the intent's state,
 * the intent's refunds by the refund's id), so an operation that did happen is recorded, never
 * sent a second time, even after the processor forgot the key. Returns how many were requeued.
 */
export async function requeueUnansweredMoneyMoves(
  sql: postgres.Sql,
  options: { olderThanMs: number; notify?: boolean },
): Promise<number> {
  const idle = (table: string) => drizzleSql`
    ${drizzleSql.raw(table)}.status = 'unknown'
    and ${drizzleSql.raw(table)}.updated_at < now() - ${msInterval(options.olderThanMs)}
    and not exists (
      select 1 from outbox_jobs as job
      where job.tenant_id = ${drizzleSql.raw(table)}.tenant_id
        and job.downstream_key = ${drizzleSql.raw(table)}.downstream_key and ${isLiveJob('job')})`;
  const rows = await runStatement<Unanswered>(
    sql,
    drizzleSql`
    select tenant_id, id, payment_id, kind, amount, downstream_key
    from payment_actions as action where ${idle('action')}
    union all
    select tenant_id, id, payment_id, 'refund', amount, downstream_key
    from refunds as refund where ${idle('refund')}
    limit 100`,
  );
  for (const row of rows) {
    await sql.begin(async (tx) => {
      const table = row.kind === 'refund' ? 'refunds' : 'payment_actions';
      // Claims the row for this pass (another reconciler's update waits, then matches nothing).
      const touched = await tx`
        update ${tx(table)} set updated_at = now()
        where tenant_id = ${row.tenant_id} and id = ${row.id} and status = 'unknown'
          and updated_at < now() - ${`${options.olderThanMs} milliseconds`}::interval
        returning id`;
      if (touched.length === 0) return;
      const job = {
        tenantId: row.tenant_id,
        id: newJobId(),
        paymentId: row.payment_id,
        downstreamKey: row.downstream_key,
      };
      await enqueueOutboxJob(tx, moneyMoveJob(job, row.kind, row.id, row.amount), {
        notify: options.notify !== false,
      });
    });
  }
  return rows.length;
}
