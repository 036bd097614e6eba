import { sql } from 'drizzle-orm';
import { causeChain } from '../../core/cause-chain.ts';
import {
  type InsertCompletedInput,
  type InsertCompletedResult,
  identity,
  type KeyIdentity,
  type KeyLookup,
} from '../../core/types.ts';
import type { AnswerCodec } from './answer-codec.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import {
  type KeyRecordRow,
  keyRecordColumns,
  RESPONSE_BODY,
  toKeyRecord,
} from './key-record-sql.ts';
import {
  ACQUIRED_VIA,
  atomicMayTakeOver,
  EXPIRED_LEASE_POLICY,
  isKey,
  NO_HOLDER,
  NOTHING_COMMITTED,
  START_OVER,
  STATE,
  sameRequestUnlessFinished,
} from './key-state-machine.ts';
import { isSerializationFailure, preparedStatement } from './prepared-statement.ts';

/** Postgres `lock_not_available`: the wait exceeded the connection's `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Atomic mode's only statement before the handler: a primary-key read. It commits nothing
 * and forces no WAL flush; correctness does not depend on it (the insert below decides).
 */
export async function lookupKey(
  db: AnyPgDatabase,
  id: KeyIdentity,
  codec: AnswerCodec,
): Promise<KeyLookup | undefined> {
  const [row] = await lookupStatement(db, identity(id));
  if (!row) return undefined;
  // A writable row's answer is never replayed (it is overwritten): it is left sealed.
  const writable = row.writable === true;
  return { record: toKeyRecord(row, id, codec, !writable), writable };
}

const p = sql.placeholder;

const lookupStatement = preparedStatement<KeyRecordRow & { writable: boolean }>(
  'once_idempotency_lookup',
  sql`select ${keyRecordColumns('k')}, ${atomicMayTakeOver('k')} as writable
      from idempotency_keys k
      where ${isKey('k')}`,
);

/**
 * Insert the key ALREADY completed inside the caller's transaction. A concurrent duplicate's
 * uncommitted insert makes this statement wait on the primary key until that transaction ends
 * (bounded by `lock_timeout`); if it committed, the conflict arm's WHERE is false and no row
 * comes back: `conflict`, the caller's transaction must roll back and the engine replays.
 * Released / expired rows are overwritten in place under `atomicMayTakeOver` and
 * `sameRequestUnlessFinished` (see `key-state-machine.ts` for how that differs from the
 * leased reservation's takeover).
 */
export async function insertCompletedKey(
  executor: AnyPgDatabase,
  input: InsertCompletedInput,
  codec: AnswerCodec,
): Promise<InsertCompletedResult> {
  const { response } = input;
  const body = codec.seal(identity(input), RESPONSE_BODY, response.body);
  try {
    // `set_config(..., true)` is SET LOCAL: it lasts until the caller's transaction ends, so the
    // previous value is put back right after the insert for the caller's later statements.
    const previousLockTimeout =
      input.lockWaitMs === undefined
        ? undefined
        : rowsOf<{ previous: string }>(
            await executor.execute(
              sql`select current_setting('lock_timeout') as previous,
                set_config('lock_timeout', ${`${Math.ceil(input.lockWaitMs)}ms`}, true)`,
            ),
          )[0]?.previous;
    const rows = await insertCompletedStatement(executor, {
      tenantId: input.tenantId,
      operation: input.operation,
      key: input.key,
      fingerprint: input.fingerprint,
      status: response.status,
      headers: JSON.stringify(response.headers),
      body: body.text,
      bodyKeyId: body.keyId,
      ttlMs: input.ttlMs,
      tombstoneMs: input.tombstoneMs ?? 0,
    });
    if (previousLockTimeout !== undefined)
      await executor.execute(sql`select set_config('lock_timeout', ${previousLockTimeout}, true)`);
    return rows.length > 0 ? 'inserted' : 'conflict';
  } catch (error) {
    if (causeChain(error).some((e) => e.code === LOCK_NOT_AVAILABLE)) return 'lock_timeout';
    // REPEATABLE READ or SERIALIZABLE: a duplicate committed after this transaction's snapshot.
    // The transaction is rolled back, as for a conflict; the engine answers from the key's row.
    if (isSerializationFailure(error)) return 'conflict';
    throw error;
  }
}

const insertCompletedStatement = preparedStatement(
  'once_idempotency_insert_completed',
  sql`
        insert into idempotency_keys as k
          (tenant_id, operation, key, fingerprint, state, owner_token, locked_until,
           recovery_point, on_expired_lease, tombstone_ms, acquired_via, response_status,
           response_headers, response_body, response_key_id, completed_at, expires_at)
        values (${p('tenantId')}, ${p('operation')}, ${p('key')}, ${p('fingerprint')}, ${STATE.completed},
          null, null, ${NOTHING_COMMITTED}, ${EXPIRED_LEASE_POLICY.resume}, ${p('tombstoneMs')}, ${ACQUIRED_VIA.atomic}, ${p('status')},
          ${p('headers')}::jsonb, ${p('body')}, ${p('bodyKeyId')}, now(), now() + ${msInterval(p('ttlMs'))})
        on conflict (tenant_id, operation, key) do update set
          fingerprint = excluded.fingerprint, state = ${STATE.completed}, ${NO_HOLDER}, ${START_OVER},
          acquired_via = ${ACQUIRED_VIA.atomic}, response_status = excluded.response_status,
          response_headers = excluded.response_headers, response_body = excluded.response_body,
          response_key_id = excluded.response_key_id, tombstone_ms = excluded.tombstone_ms,
          completed_at = now(), attempts = k.attempts + 1, expires_at = excluded.expires_at,
          updated_at = now()
        where ${atomicMayTakeOver('k')}
          and ${sameRequestUnlessFinished('k')}
        returning 1`,
);
