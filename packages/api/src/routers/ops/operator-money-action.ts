import type { Database, Transaction } from '../../database.ts';
import { type MoneyActionContext, requestKeyOf } from '../../money-actions/index.ts';

/** The request context of a guarded ops procedure, as far as a money action reads it. */
interface GuardedOpsContext<TResult> {
  db: Database;
  tenantId: string;
  principal: string;
  outboxNotify?: boolean;
  idempotency: {
    operation: string;
    key: string | undefined;
    complete(tx: Transaction, result: TResult): Promise<void>;
  };
}

/**
 * The money action's context from a guarded ops procedure's `ctx`, built in one place for every
 * such procedure.
 */
export function moneyActionContext<TResult>(
  ctx: GuardedOpsContext<TResult>,
): MoneyActionContext<TResult> {
  return {
    db: ctx.db,
    tenantId: ctx.tenantId,
    principal: ctx.principal,
    requestKey: requestKeyOf(ctx.idempotency),
    notifyOutbox: ctx.outboxNotify,
    complete: (tx, result) => ctx.idempotency.complete(tx, result),
  };
}
