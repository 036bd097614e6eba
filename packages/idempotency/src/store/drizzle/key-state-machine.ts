import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import {
  INITIAL_RECOVERY_POINT,
  identity,
  type KeyIdentity,
  type KeyState,
} from '../../core/types.ts';
import { msInterval } from './interval-sql.ts';

/**
 * The key state machine of `docs/state-machine.md`, as the SQL every store statement composes.
 * Each predicate below is one condition of that table, named once; the statements in
 * `reserve-key.ts`, `atomic-key.ts`, `store.ts`, `sweeper.ts`, `resolve-unknown.ts` and
 * `reaper.ts` are built from them, so a rule changes here or nowhere.
 *
 * Predicates take the alias of the `idempotency_keys` row they test (`k`, `e`, ...).
 */

/** A key state as an SQL literal (kept literal, not a bind parameter, so plans stay stable). */
function literal(value: string): SQL {
  return sql.raw(`'${value}'`);
}

/** The four states of a key row, as SQL literals. */
export const STATE = {
  inProgress: literal('in_progress' satisfies KeyState),
  completed: literal('completed' satisfies KeyState),
  released: literal('released' satisfies KeyState),
  unknown: literal('unknown' satisfies KeyState),
  expired: literal('expired' satisfies KeyState),
} as const;

/** The recovery point of a key no phase has committed for, as an SQL literal. */
export const NOTHING_COMMITTED = literal(INITIAL_RECOVERY_POINT);

/** What happens to an expired lease whose phases committed (`on_expired_lease`), as SQL literals. */
export const EXPIRED_LEASE_POLICY = {
  resume: literal('resume'),
  unknown: literal('unknown'),
} as const;

/** How the current holder got the key (`acquired_via`), as SQL literals. */
export const ACQUIRED_VIA = {
  insert: literal('insert'),
  released: literal('released'),
  expiredResponse: literal('expired_response'),
  expiredLease: literal('expired_lease'),
  atomic: literal('atomic'),
} as const;

const col = (alias: string, column: string) => sql.raw(`${alias}.${column}`);

/** `released`: the last attempt failed before any side effect; anyone may run the key again. */
export function isReleased(k: string): SQL {
  return sql`${col(k, 'state')} = ${STATE.released}`;
}

/** When a completed row's tombstone window ends: its retention plus its `tombstone_ms`. */
function tombstoneEnd(k: string): SQL {
  return sql`(${col(k, 'expires_at')} + ${col(k, 'tombstone_ms')} * interval '1 millisecond')`;
}

/**
 * A tombstone: `completed` past its retention but within its tombstone window (the reaper
 * turns it into `expired`, its answer dropped, or has not yet), or `expired` within it. A
 * retry is refused; neither leased nor atomic attempts take it over.
 */
export function isTombstone(k: string): SQL {
  return sql`((${col(k, 'state')} = ${STATE.expired} and ${col(k, 'expires_at')} > now())
    or (${col(k, 'state')} = ${STATE.completed} and ${col(k, 'expires_at')} <= now() and ${tombstoneEnd(k)} > now()))`;
}

/** A completed key whose retention (and tombstone window) ended: it is no longer answered, the key runs again. */
function isExpiredResponse(k: string): SQL {
  return sql`((${col(k, 'state')} = ${STATE.completed} and ${tombstoneEnd(k)} <= now())
    or (${col(k, 'state')} = ${STATE.expired} and ${col(k, 'expires_at')} <= now()))`;
}

/** `in_progress` whose holder stopped renewing its lease (crashed, hung, or partitioned away). */
export function isExpiredLease(k: string, asOf: SQL = sql`now()`): SQL {
  return sql`(${col(k, 'state')} = ${STATE.inProgress} and ${col(k, 'locked_until')} <= ${asOf})`;
}

/** No phase committed (`recovery_point` still at the initial point): nothing can have happened. */
export function nothingCommitted(k: string): SQL {
  return sql`${col(k, 'recovery_point')} = ${NOTHING_COMMITTED}`;
}

/** `unknown`: a side effect may have happened; only reconciliation moves the key on. */
export function isUnknown(k: string): SQL {
  return sql`${col(k, 'state')} = ${STATE.unknown}`;
}

/** The placeholder values `isHeldBy` reads (`isKey` reads `identity(id)`). */
export function heldValues(id: KeyIdentity, ownerToken: string) {
  return { ...identity(id), ownerToken };
}

/** The key's identity: tenant first (sharding), then operation, then the client's key. */
export function isKey(k: string): SQL {
  const p = sql.placeholder;
  return sql`${col(k, 'tenant_id')} = ${p('tenantId')} and ${col(k, 'operation')} = ${p('operation')}
    and ${col(k, 'key')} = ${p('key')}`;
}

/** Holder-only writes: this key, still running, still held by this attempt's owner token. */
export function isHeldBy(k: string): SQL {
  return sql`${isKey(k)} and ${col(k, 'state')} = ${STATE.inProgress}
    and ${col(k, 'owner_token')} = ${sql.placeholder('ownerToken')}`;
}

/**
 * LEASED takeover rule (the reservation): a new attempt may take a row that is released, an
 * expired response, or an expired lease of the SAME request (`excluded` is the new attempt),
 * whatever its recovery point: the new holder resumes at the last committed phase.
 */
export function leasedMayTakeOver(k: string): SQL {
  return sql`(${isReleased(k)}
    or ${isExpiredResponse(k)}
    or (${isExpiredLease(k)} and ${col(k, 'fingerprint')} = excluded.fingerprint))`;
}

/**
 * ATOMIC takeover rule, without the fingerprint (the lookup cannot know it; see
 * `sameRequestUnlessFinished`). Differs from `leasedMayTakeOver` ON PURPOSE: an atomic attempt
 * has no phases to resume, so an expired lease is taken over only when NOTHING committed (a
 * leased holder at the initial point committed nothing; its owner-token-guarded writes fail
 * once the row is completed by someone else). A row with a committed phase keeps answering
 * 409 (or `unknown`), as in leased mode.
 */
export function atomicMayTakeOver(k: string): SQL {
  return sql`(${isReleased(k)}
    or ${isExpiredResponse(k)}
    or (${isExpiredLease(k)} and ${nothingCommitted(k)}))`;
}

/**
 * An expired lease never takes over a DIFFERENT request (that is a reused key: 422); finished
 * rows (released, expired response) may run any request. The SQL twin of
 * `mayOverwriteFoundKey` in core (atomic mode checks it in TypeScript after the lookup).
 */
export function sameRequestUnlessFinished(k: string): SQL {
  return sql`(${col(k, 'state')} <> ${STATE.inProgress} or ${col(k, 'fingerprint')} = excluded.fingerprint)`;
}

/**
 * An expired lease whose phases committed under the `unknown` policy is parked as `unknown`
 * (by the reservation or the sweeper) instead of being taken over or left for resumption.
 * The caller has already established that the lease expired.
 */
export function expiredLeaseParksUnknown(k: string): SQL {
  return sql`(${col(k, 'state')} = ${STATE.inProgress} and not ${nothingCommitted(k)}
    and ${col(k, 'on_expired_lease')} = ${EXPIRED_LEASE_POLICY.unknown})`;
}

/**
 * What the sweeper settles: leases expired for at least `graceMs` that are either at the
 * initial point (-> `released`) or under the `unknown` policy (-> `unknown`). An expired lease
 * with committed phases under `resume` is left for the next retry to resume.
 */
export function sweepable(k: string, graceMs: number): SQL {
  return sql`${isExpiredLease(k, sql`now() - ${msInterval(graceMs)}`)}
    and (${nothingCommitted(k)} or ${col(k, 'on_expired_lease')} = ${EXPIRED_LEASE_POLICY.unknown})`;
}

/**
 * Expired leases the sweeper leaves alone, which the completer takes over: committed phases
 * under the `resume` policy. `graceMs` is a number or a `sql.placeholder`.
 */
export function leftForResume(k: string, graceMs: number | SQLWrapper): SQL {
  return sql`${isExpiredLease(k, sql`now() - ${msInterval(graceMs)}`)} and not ${nothingCommitted(k)}
    and ${col(k, 'on_expired_lease')} = ${EXPIRED_LEASE_POLICY.resume}`;
}

/**
 * What the reaper deletes: terminal rows (`completed`, `released`, `expired`) past their
 * retention, a completed one past its tombstone window too (`expires_at` first: the index).
 */
export function reapable(k: string): SQL {
  return sql`${col(k, 'state')} in (${STATE.completed}, ${STATE.released}, ${STATE.expired})
    and ${col(k, 'expires_at')} <= now()
    and (${col(k, 'state')} <> ${STATE.completed} or ${tombstoneEnd(k)} <= now())`;
}

/** What the reaper turns into a tombstone (`expired`): a completed key within its tombstone window. */
export function tombstoneDue(k: string): SQL {
  return sql`${col(k, 'state')} = ${STATE.completed} and ${col(k, 'expires_at')} <= now()
    and ${tombstoneEnd(k)} > now()`;
}

/** Turning a completed key into its tombstone: kept until its window ends, its answer dropped. */
export function toTombstone(k: string): SQL {
  return sql`state = ${STATE.expired}, expires_at = ${tombstoneEnd(k)},
    response_headers = null, response_body = null, response_key_id = null, updated_at = now()`;
}

/**
 * What an operator may release (`released`: the key may run again): an expired lease that
 * committed nothing (what the sweeper would do, sooner), or an `unknown` key the operator has
 * reconciled as "nothing happened" (what `resolveUnknownKey` released does). Never a live lease
 * (it is running), an expired lease with committed phases (a committed phase must not run
 * twice: the next retry resumes it), or a finished key.
 */
export function operatorMayRelease(k: string): SQL {
  return sql`((${isExpiredLease(k)} and ${nothingCommitted(k)}) or ${isUnknown(k)})`;
}

/**
 * What an operator may evict (delete before its retention ends, so the key's next request
 * runs again): only finished keys, `completed`, `released` or a tombstone (`expired`). An `unknown` key is released
 * with a reason instead; a running one is never touched.
 */
export function operatorMayEvict(k: string): SQL {
  return sql`${col(k, 'state')} in (${STATE.completed}, ${STATE.released}, ${STATE.expired})`;
}

/** Columns reset when a key starts over from nothing (release, resolve-released, new request). */
export const START_OVER = sql`recovery_point = ${NOTHING_COMMITTED}, recovery_data = null`;

/** Columns cleared when nobody holds the key any more. */
export const NO_HOLDER = sql`owner_token = null, locked_until = null`;
