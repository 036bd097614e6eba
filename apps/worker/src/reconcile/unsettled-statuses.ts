import { unsettledPaymentStatuses } from '@once/payments';
import { sqlLiteralList } from '@once/postgres/sql';
import { type SQL, sql } from 'drizzle-orm';

/**
 * `<column> in ('processing', 'unknown')`: the unsettled payment states (the reconciler's
 * work), spelled once from the state machine. Literals, not bind parameters: the planner can
 * match a partial index only against a predicate it can see, and `payments_status_updated_idx`
 * is defined with exactly this list.
 */
export function isUnsettled(column: string): SQL {
  return sql`${sql.raw(column)} in ${sqlLiteralList(unsettledPaymentStatuses)}`;
}
