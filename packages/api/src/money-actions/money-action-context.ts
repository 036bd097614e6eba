import { IdempotencyError } from '@once/idempotency';
import type { Database, Transaction } from '../database.ts';

/**
 * What a guarded money action needs from its request, whatever the transport: the tenant and
 * who acts (from authentication, never the body), and the caller's key, completed inside the
 * action's own transaction so the action, its job and the stored answer commit together.
 */
export interface MoneyActionContext<TResult> {
  db: Database;
  tenantId: string;
  principal: string;
  /** The caller's Idempotency-Key as sent: the action's ids derive from it (with the tenant). */
  requestKey: string;
  /** Completes the caller's Idempotency-Key inside the action's own transaction. */
  complete(tx: Transaction, result: TResult): Promise<void>;
  /** NOTIFY the workers (default true); false on engines without LISTEN/NOTIFY. */
  notifyOutbox?: boolean;
}

/** The caller's key of a guarded execution; a money action always requires one. */
export function requestKeyOf(exec: { key: string | undefined }): string {
  if (!exec.key) throw new IdempotencyError('idempotency_key_missing');
  return exec.key;
}
