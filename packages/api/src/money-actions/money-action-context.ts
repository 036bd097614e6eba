import { IdempotencyError } from '@once/idempotency';
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
  /**
   * The caller's Idempotency-Key as it sent it, whatever the transport: the action's id and
   * downstream key are derived from it (with the tenant), so a request retried after its rows
   * were lost, or sent again on another transport, is the same action.
   */
  requestKey: string;
  /** Completes the caller's Idempotency-Key inside the action's own transaction. */
  complete(tx: Transaction, result: TResult): Promise<void>;
  /** NOTIFY the workers (default true); false on engines without LISTEN/NOTIFY. */
  notifyOutbox?: boolean;
}

/**
 * The caller's key of a guarded execution (any adapter's). Money actions always require a key;
 * one missing here is refused like at the guard.
 */
export function requestKeyOf(exec: { key: string | undefined }): string {
  if (!exec.key) throw new IdempotencyError('idempotency_key_missing');
  return exec.key;
}
