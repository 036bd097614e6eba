import { sql } from 'drizzle-orm';
import type {
  InsertCompletedInput,
  InsertCompletedResult,
  KeyIdentity,
  KeyLookup,
} from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { type KeyRecordRow, keyRecordColumns, toKeyRecord } from './key-record-sql.ts';
import { preparedStatement } from './prepared-statement.ts';

/** Postgres `lock_not_available`: the wait exceeded the connection's `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Rows a new atomic attempt may overwrite: the reservation's rules minus anything that holds a
 * live lease or committed a phase (those keep answering 409, as in leased mode). A leased
 * holder whose lease expired at 'started' committed nothing; its owner-token-guarded writes
 * fail once the row is completed by someone else, so taking it over is safe.
 */
const writableRow = (k: string) => {
  const a = sql.raw(k);
  return sql`(${a}.state = 'released'
    or (${a}.state = 'completed' and ${a}.expires_at <= now())
    or (${a}.state = 'in_progress' and ${a}.locked_until <= now() and ${a}.recovery_point = 'started'))`;
};

/**
 * Atomic mode's only statement before the handler: a primary-key read. It commits nothing
 * and forces no WAL flush; correctness does not depend on it (the insert below decides).
 */
export async function lookupKey(
  db: AnyPgDatabase,
  id: KeyIdentity,
): Promise<KeyLookup | undefined> {
  const [row] = await lookupStatement(db, {
    tenantId: id.tenantId,
    operation: id.operation,
    key: id.key,
  });
  return row ? { record: toKeyRecord(row), writable: row.writable === true } : undefined;
}

const p = sql.placeholder;

/** Built once; see `preparedStatement` for why (one round trip, no per-call query building). */
const lookupStatement = preparedStatement<KeyRecordRow & { writable: boolean }>(
  'once_idempotency_lookup',
  sql`select ${keyRecordColumns('k')}, ${writableRow('k')} as writable
      from idempotency_keys k
      where k.tenant_id = ${p('tenantId')} and k.operation = ${p('operation')} and k.key = ${p('key')}`,
);

/**
 * Insert the key ALREADY completed inside the caller's transaction. A concurrent duplicate's
 * uncommitted insert makes this statement wait on the primary key until that transaction ends
 * (bounded by `lock_timeout`); if it committed, the conflict arm's WHERE is false and no row
 * comes back: `conflict`, the caller's transaction must roll back and the engine replays.
 * Released / expired rows are overwritten in place (same rules as the leased reservation).
 */
export async function insertCompletedKey(
  executor: AnyPgDatabase,
  input: InsertCompletedInput,
): Promise<InsertCompletedResult> {
  const { response } = input;
  try {
    const rows = await insertCompletedStatement(executor, {
      tenantId: input.tenantId,
      operation: input.operation,
      key: input.key,
      fingerprint: input.fingerprint,
      status: response.status,
      headers: JSON.stringify(response.headers),
      body: response.body,
      ttlMs: input.ttlMs,
    });
    return rows.length > 0 ? 'inserted' : 'conflict';
  } catch (error) {
    if (postgresCode(error) === LOCK_NOT_AVAILABLE) return 'lock_timeout';
    throw error;
  }
}

const insertCompletedStatement = preparedStatement(
  'once_idempotency_insert_completed',
  sql`
        insert into idempotency_keys as k
          (tenant_id, operation, key, fingerprint, state, owner_token, locked_until,
           recovery_point, on_expired_lease, acquired_via, response_status, response_headers,
           response_body, completed_at, expires_at)
        values (${p('tenantId')}, ${p('operation')}, ${p('key')}, ${p('fingerprint')}, 'completed',
          null, null, 'started', 'resume', 'atomic', ${p('status')},
          ${p('headers')}::jsonb, ${p('body')}, now(), now() + ${msInterval(p('ttlMs'))})
        on conflict (tenant_id, operation, key) do update set
          fingerprint = excluded.fingerprint, state = 'completed', owner_token = null,
          locked_until = null, recovery_point = 'started', recovery_data = null,
          acquired_via = 'atomic', response_status = excluded.response_status,
          response_headers = excluded.response_headers, response_body = excluded.response_body,
          completed_at = now(), attempts = k.attempts + 1, expires_at = excluded.expires_at,
          updated_at = now()
        where ${writableRow('k')}
          and (k.state <> 'in_progress' or k.fingerprint = excluded.fingerprint)
        returning 1`,
);

/** SQLSTATE of a driver error, also when drizzle wraps it (DrizzleQueryError.cause). */
function postgresCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.length === 5) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
