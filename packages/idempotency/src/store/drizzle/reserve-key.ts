import { sql } from 'drizzle-orm';
import { identity, type ReserveInput, type ReserveResult } from '../../core/types.ts';
import type { AnswerCodec } from './answer-codec.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { type KeyRecordRow, keyRecordColumns, toKeyRecord } from './key-record-sql.ts';
import {
  ACQUIRED_VIA,
  expiredLeaseParksUnknown,
  isKey,
  isReleased,
  leasedMayTakeOver,
  NOTHING_COMMITTED,
  STATE,
} from './key-state-machine.ts';
import { isSerializationFailure, preparedStatement } from './prepared-statement.ts';
import { countNewKey } from './rate-limit-counter.ts';

const p = sql.placeholder;
const parksUnknown = expiredLeaseParksUnknown('k');

type ReservationRow = KeyRecordRow & { source: 'attempt' | 'existing' };

/** The row both reservation statements insert for a key not there: leased, nothing committed. */
const insertNewKey = sql`
  insert into idempotency_keys as k
    (tenant_id, operation, key, fingerprint, state, owner_token, locked_until,
     recovery_point, on_expired_lease, tombstone_ms, acquired_via, expires_at)
  values (${p('tenantId')}, ${p('operation')}, ${p('key')}, ${p('fingerprint')}, ${STATE.inProgress},
    ${p('ownerToken')}, now() + ${msInterval(p('leaseMs'))}, ${NOTHING_COMMITTED}, ${p('onExpiredLease')},
    ${p('tombstoneMs')}, ${ACQUIRED_VIA.insert}, now() + ${msInterval(p('ttlMs'))})`;

/**
 * The reservation when `newKeyStatement` found the key taken: ONE atomic statement. It inserts
 * the key (gone again since), or takes it over under `leasedMayTakeOver` (released, an expired
 * response, or an expired lease of the same request). An expired lease whose phases committed
 * under the `unknown` policy is turned `unknown` instead of taken over
 * (`expiredLeaseParksUnknown`). When the conditional update does not fire, the second branch
 * returns the existing row so the engine can tell replay / 409 / 422 apart.
 */
const reservationStatement = preparedStatement<ReservationRow>(
  'once_idempotency_reserve',
  sql`
    with attempt as (
      ${insertNewKey}
      on conflict (tenant_id, operation, key) do update set
        state = case when ${parksUnknown} then ${STATE.unknown} else ${STATE.inProgress} end,
        owner_token = case when ${parksUnknown} then null else excluded.owner_token end,
        locked_until = case when ${parksUnknown} then null else excluded.locked_until end,
        acquired_via = case
          when ${isReleased('k')} then ${ACQUIRED_VIA.released}
          when k.state = ${STATE.completed} then ${ACQUIRED_VIA.expiredResponse}
          else ${ACQUIRED_VIA.expiredLease} end,
        -- An expired lease keeps its request and its committed phases (the new holder resumes);
        -- a finished row starts over for the new request.
        fingerprint = case when k.state = ${STATE.inProgress} then k.fingerprint else excluded.fingerprint end,
        recovery_point = case when k.state = ${STATE.inProgress} then k.recovery_point else ${NOTHING_COMMITTED} end,
        recovery_data = case when k.state = ${STATE.inProgress} then k.recovery_data else null end,
        on_expired_lease = case when k.state = ${STATE.inProgress} then k.on_expired_lease else excluded.on_expired_lease end,
        response_status = null, response_headers = null, response_body = null, response_key_id = null,
        completed_at = null,
        attempts = k.attempts + 1,
        tombstone_ms = excluded.tombstone_ms,
        expires_at = excluded.expires_at,
        updated_at = now()
      where ${leasedMayTakeOver('k')}
      returning ${keyRecordColumns('k')}
    )
    select 'attempt' as source, * from attempt
    union all
    select 'existing' as source, ${keyRecordColumns('e')}
    from idempotency_keys e
    where ${isKey('e')}
      and not exists (select 1 from attempt)`,
);

/**
 * A brand-new key, the common case, first: `reservationStatement`'s insert without its costlier
 * takeover and existing-row branches. It inserts or does nothing; a key that exists (or whose
 * concurrent insert committed first) goes on to `reservationStatement`, which decides.
 */
const newKeyStatement = preparedStatement<KeyRecordRow>(
  'once_idempotency_reserve_new',
  sql`
    ${insertNewKey}
    on conflict (tenant_id, operation, key) do nothing
    returning ${keyRecordColumns('k')}`,
);

class RateLimited extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('rate limited');
  }
}

/** Run the reservation (plus, for brand-new keys, the tenant's rate-limit counter in the same tx). */
export async function reserveKey(
  db: AnyPgDatabase,
  input: ReserveInput,
  codec: AnswerCodec,
): Promise<ReserveResult> {
  // The statement sees one snapshot: a row committed by a racing request after that snapshot
  // blocks our insert but is invisible to the second branch. Re-running sees it.
  for (let attempt = 0; attempt < 5; attempt++) {
    const result = input.rateLimit
      ? await reserveWithRateLimit(db, input, codec)
      : await reserveOnce(db, input, codec);
    if (result) return result;
  }
  throw new Error('Idempotency reservation found neither a row nor a conflict-free insert');
}

async function reserveOnce(
  db: AnyPgDatabase,
  input: ReserveInput,
  codec: AnswerCodec,
): Promise<ReserveResult | undefined> {
  const values = {
    tenantId: input.tenantId,
    operation: input.operation,
    key: input.key,
    fingerprint: input.fingerprint,
    ownerToken: input.ownerToken,
    leaseMs: input.leaseMs,
    ttlMs: input.ttlMs,
    onExpiredLease: input.onExpiredLease,
    tombstoneMs: input.tombstoneMs ?? 0,
  };
  const [inserted] = await newKeyStatement(db, values);
  const id = identity(input);
  if (inserted)
    return {
      kind: 'acquired',
      record: toKeyRecord(inserted, id, codec),
      created: true,
      takenOver: false,
    };
  const [row] = await reservationStatement(db, values);
  if (!row) return undefined;
  const record = toKeyRecord(row, id, codec);
  // The existing branch reads the statement's snapshot, the conflict the row's latest
  // version: a row that branch still shows `released` (which the update would have taken)
  // was taken over by a request that committed while this one waited. Read again.
  if (row.source === 'existing') {
    return record.state === 'released' ? undefined : { kind: 'existing', record };
  }
  // The update may have parked an expired lease as `unknown` instead of taking it over.
  if (record.state !== 'in_progress' || record.ownerToken !== input.ownerToken)
    return { kind: 'existing', record };
  return {
    kind: 'acquired',
    record,
    created: row.acquired_via === 'insert',
    takenOver: row.acquired_via === 'expired_lease',
  };
}

async function reserveWithRateLimit(
  db: AnyPgDatabase,
  input: ReserveInput,
  codec: AnswerCodec,
): Promise<ReserveResult | undefined> {
  const limit = input.rateLimit;
  if (!limit) return reserveOnce(db, input, codec);
  try {
    return await db.transaction(async (tx) => {
      const result = await reserveOnce(tx, input, codec);
      if (result?.kind !== 'acquired' || !result.created) return result;
      const scope = { tenantId: input.tenantId, principal: input.principal ?? '' };
      const counted = await countNewKey(tx, scope, limit);
      // Throwing rolls back both the new key and the counter increment.
      if (counted.limited) throw new RateLimited(counted.retryAfterSeconds);
      return result;
    });
  } catch (error) {
    if (error instanceof RateLimited)
      return { kind: 'rate_limited', retryAfterSeconds: error.retryAfterSeconds };
    // Rolled back (REPEATABLE READ or SERIALIZABLE): `reserveKey` runs it again.
    if (isSerializationFailure(error)) return undefined;
    throw error;
  }
}
