import type { Database, Transaction } from '../../database.ts';

/**
 * What an operator's guarded money action (capture, void, refund) needs from its request: the
 * tenant and who acts, and the caller's Idempotency-Key, completed inside the action's own
 * transaction so the action, its outbox job and the stored answer commit together.
 */
export interface OperatorMoneyActionContext<TResult> {
  db: Database;
  tenantId: string;
  principal: string;
  /** Completes the caller's Idempotency-Key inside the action's own transaction. */
  complete(tx: Transaction, result: TResult): Promise<void>;
  /** NOTIFY the workers (default true); false on engines without LISTEN/NOTIFY. */
  notifyOutbox?: boolean;
}

/** The request context of a guarded ops procedure, as far as a money action reads it. */
interface GuardedOpsContext<TResult> {
  db: Database;
  tenantId: string;
  principal: string;
  outboxNotify?: boolean;
  idempotency: { complete(tx: Transaction, result: TResult): Promise<void> };
}

/**
 * The money action's context from a guarded ops procedure's `ctx`, built in one place for every
 * such procedure.
 *
 * @example
 * .mutation(({ ctx, input }) => refundPayment(moneyActionContext(ctx), input))
 */
export function moneyActionContext<TResult>(
  ctx: GuardedOpsContext<TResult>,
): OperatorMoneyActionContext<TResult> {
  return {
    db: ctx.db,
    tenantId: ctx.tenantId,
    principal: ctx.principal,
    notifyOutbox: ctx.outboxNotify,
    complete: (tx, result) => ctx.idempotency.complete(tx, result),
  };
}
