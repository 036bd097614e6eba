import { unsettledPaymentStatuses } from '@once/payments';
import type postgres from 'postgres';

/**
 * The unsettled payment states (`unsettledPaymentStatuses`: the reconciler's work) as the SQL
 * literal list `'processing', 'unknown'`, spelled once from the state machine. Literals, not
 * bind parameters: the planner can match a partial index only against a predicate it can see,
 * and `payments_status_updated_idx` is defined with exactly this list.
 */
export const UNSETTLED_STATUS_LIST = unsettledPaymentStatuses
  .map((status) => {
    // Our own constants; the check keeps an unquoted value from ever reaching SQL.
    if (!/^[a-z_]+$/.test(status)) throw new Error(`unexpected payment status ${status}`);
    return `'${status}'`;
  })
  .join(', ');

/**
 * `status in (<unsettled states>)` for the reconciler's postgres.js statements.
 *
 * @example
 * await sql`select id from payments where ${isUnsettled(sql, 'status')}`;
 */
export function isUnsettled(sql: postgres.Sql | postgres.TransactionSql, column: string) {
  return sql`${sql(column)} in (${sql.unsafe(UNSETTLED_STATUS_LIST)})`;
}
