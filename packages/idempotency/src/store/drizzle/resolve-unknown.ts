import { sql } from 'drizzle-orm';
import type { KeyIdentity, StoredResponse } from '../../core/types.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';

/**
 * Reconciliation's exit from `unknown`: once the real outcome is known (for example from the
 * processor's ledger), either store the response to replay (`completed`) or let the key run
 * again (`released`). Returns false if the key was not `unknown`.
 *
 * @example
 * await resolveUnknownKey(db, { tenantId, operation: 'checkout.pay', key },
 *   { outcome: 'completed', response: { status: 200, headers: {}, body: JSON.stringify(payment) } });
 */
export async function resolveUnknownKey(
  db: AnyPgDatabase,
  id: KeyIdentity,
  resolution:
    | { outcome: 'completed'; response: StoredResponse; ttlMs?: number }
    | { outcome: 'released' },
): Promise<boolean> {
  const where = sql`tenant_id = ${id.tenantId} and operation = ${id.operation} and key = ${id.key} and state = 'unknown'`;
  const statement =
    resolution.outcome === 'completed'
      ? sql`update idempotency_keys set state = 'completed', response_status = ${resolution.response.status},
          response_headers = ${JSON.stringify(resolution.response.headers)}::jsonb,
          response_body = ${resolution.response.body}, completed_at = now(), updated_at = now(),
          expires_at = now() + (${resolution.ttlMs ?? 86_400_000}::float8 * interval '1 millisecond')
        where ${where} returning 1`
      : sql`update idempotency_keys set state = 'released', recovery_point = 'started', recovery_data = null,
          updated_at = now() where ${where} returning 1`;
  return rowsOf(await db.execute(statement)).length > 0;
}
