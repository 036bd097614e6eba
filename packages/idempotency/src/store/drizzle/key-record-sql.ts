import { type SQL, sql } from 'drizzle-orm';
import type { KeyIdentity, KeyRecord, KeyState, StoredResponse } from '../../core/types.ts';
import type { AnswerCodec } from './answer-codec.ts';
import { isTombstone, STATE } from './key-state-machine.ts';

/**
 * Columns every statement returns for a key, in driver-neutral shapes (times as epoch ms
 * float8, JSON as text): postgres.js and node-postgres parse these identically. A tombstone
 * the reaper has not turned `expired` yet is reported `expired` all the same.
 */
export function keyRecordColumns(alias: string): SQL {
  const a = sql.raw(alias);
  return sql`case when ${isTombstone(alias)} then ${STATE.expired} else ${a}.state end as state,
    ${a}.fingerprint, ${a}.owner_token,
    (extract(epoch from ${a}.locked_until) * 1000)::float8 as locked_until_ms,
    ${a}.recovery_point, ${a}.recovery_data::text as recovery_data,
    ${a}.response_status, ${a}.response_headers::text as response_headers, ${a}.response_body,
    ${a}.response_key_id, ${a}.acquired_via, (extract(epoch from now()) * 1000)::float8 as now_ms`;
}

/** A row as `keyRecordColumns` returns it. */
export interface KeyRecordRow {
  state: KeyState;
  fingerprint: string;
  owner_token: string | null;
  locked_until_ms: number | string | null;
  recovery_point: string;
  recovery_data: string | null;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  response_key_id: string | null;
  acquired_via: string;
  now_ms: number | string;
}

/** The purpose a stored answer's body is sealed for (`AnswerCodec`). */
export const RESPONSE_BODY = 'response_body';

/**
 * Map a raw row of key `id` to the engine's `KeyRecord`, its answer opened by `codec`;
 * `withAnswer: false` leaves a row the caller will overwrite unopened (no answer).
 */
export function toKeyRecord(
  row: KeyRecordRow,
  id: KeyIdentity,
  codec: AnswerCodec,
  withAnswer = true,
): KeyRecord {
  const response: StoredResponse | null =
    row.response_status === null || row.state === 'expired' || !withAnswer
      ? null
      : {
          status: Number(row.response_status),
          headers: row.response_headers
            ? (JSON.parse(row.response_headers) as Record<string, string>)
            : {},
          body: codec.open(id, RESPONSE_BODY, {
            text: row.response_body,
            keyId: row.response_key_id,
          }),
        };
  return {
    state: row.state,
    fingerprint: row.fingerprint,
    ownerToken: row.owner_token,
    lockedUntil: row.locked_until_ms === null ? null : new Date(Number(row.locked_until_ms)),
    recoveryPoint: row.recovery_point,
    recoveryData: row.recovery_data === null ? null : JSON.parse(row.recovery_data),
    response,
    now: new Date(Number(row.now_ms)),
  };
}
