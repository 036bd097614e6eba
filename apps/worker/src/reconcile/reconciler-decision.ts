import { type PaymentEventInput, recordPaymentEvents } from '@once/db/payment-events';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql, type SQL } from 'drizzle-orm';
import type postgres from 'postgres';

/** A payment a reconciler pass looks at. */
export interface ReconciledPayment {
  tenant_id: string;
  id: string;
  reconcile_checks: number;
}

/** A `reconciler.decided` event: what the processor said, and what was done about it. */
export function reconcilerDecided(
  payment: ReconciledPayment,
  detail: Record<string, unknown>,
): PaymentEventInput {
  return {
    tenantId: payment.tenant_id,
    paymentId: payment.id,
    actor: 'reconciler',
    kind: 'reconciler.decided',
    detail,
  };
}

/**
 * Runs one decision's writes and, if they changed anything, records it as a
 * `reconciler.decided` event in the same transaction: the timeline shows a decision if and
 * only if it took effect.
 */
export function decided(
  sql: postgres.Sql,
  payment: ReconciledPayment,
  detail: Record<string, unknown>,
  write: (tx: postgres.TransactionSql) => Promise<boolean>,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await write(tx))) return false;
    await recordPaymentEvents(tx, [reconcilerDecided(payment, detail)]);
    return true;
  });
}

/**
 * Moves an undecided payment's next check `delayMs` later and counts the check, while its
 * status still matches `stillUndecided`, with the decision's event.
 */
export async function checkAgainLater(
  sql: postgres.Sql,
  payment: ReconciledPayment,
  stillUndecided: SQL,
  delayMs: number,
  detail: Record<string, unknown>,
): Promise<void> {
  const decision = {
    ...detail,
    decision: 'check_again_later',
    check: payment.reconcile_checks + 1,
    retryInMs: delayMs,
  };
  await decided(sql, payment, decision, async (tx) => {
    const rows = await runStatement(
      tx,
      drizzleSql`
      update payments
      set reconcile_after = now() + ${msInterval(delayMs)},
          reconcile_checks = reconcile_checks + 1
      where tenant_id = ${payment.tenant_id} and id = ${payment.id} and ${stillUndecided}
      returning id`,
    );
    return rows.length === 1;
  });
}
