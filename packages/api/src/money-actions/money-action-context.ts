import type { Database, Transaction } from '../database.ts';

/**
 * What a guarded money action (capture, void, refund) needs from the request that asks for it,
 * whatever its transport (the operator's tRPC mutation, the merchant's REST route or GraphQL
 * mutation): the tenant and who acts (from authentication, never from the body), and the
 * caller's Idempotency-Key, completed inside the action's own transaction so the action, its
 * outbox job and the stored answer commit together.
 */
export interface MoneyActionContext<TResult> {
  db: Database;
  tenantId: string;
  principal: string;
  /** Completes the caller's Idempotency-Key inside the action's own transaction. */
  complete(tx: Transaction, result: TResult): Promise<void>;
  /** NOTIFY the workers (default true); false on engines without LISTEN/NOTIFY. */
  notifyOutbox?: boolean;
}
