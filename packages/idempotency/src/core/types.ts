/** What is stored for a completed key and sent back on replay. */
export interface StoredResponse {
  status: number;
  /** Lower-case header names; only allow-listed headers are ever stored. */
  headers: Record<string, string>;
  /** UTF-8 text (JSON for tRPC results), or null for an empty body. */
  body: string | null;
}

/** Per-operation behaviour. Every field has a default; see docs/reference.md. */
export interface OperationPolicy {
  /** How long a finished key is kept and replayed. Default 24 h. */
  ttlMs?: number;
  /**
   * How long after `ttlMs` a completed key is kept as a tombstone (its fingerprint and status,
   * no answer): a retry with the key is then refused (409 `idempotency_key_expired`) instead of
   * running again; after the window the key runs as new. Default 0 (no tombstone: a late retry
   * runs again). For callers that retry days later (agents, redelivered queue messages).
   */
  tombstoneMs?: number;
  /** How long an attempt owns the key before another retry may take it over. Default 30 s. */
  leaseMs?: number;
  /**
   * When a lease expires after at least one phase committed: `'resume'` lets the next retry
   * continue from the last recovery point (safe when the remaining phases are DB-only or use
   * downstream idempotency keys); `'unknown'` parks the key for reconciliation. Default `'resume'`.
   */
  onExpiredLease?: 'resume' | 'unknown';
  /** Renew the lease automatically every leaseMs/3 while the handler runs. Default true. */
  heartbeat?: boolean;
  /**
   * Count this operation's new keys against the engine's `rateLimit` (per tenant and principal). Default
   * true. Turn it off for operations whose callers are already trusted and whose volume
   * follows the tenant's own traffic, such as your processor's signed webhooks: otherwise
   * they use up the allowance meant for clients.
   */
  rateLimited?: boolean;
  /**
   * `'leased'` (default): the key is reserved (committed) before the handler runs, held with a
   * lease and an owner token; supports recovery points, external calls and late completion.
   * `'atomic'`: for handlers whose EVERY effect is a write in ONE database transaction. Nothing
   * is written before the handler; `exec.complete(tx, response)` inserts the key already
   * completed inside that transaction, and the primary key decides between racing duplicates.
   * No lease, heartbeat or owner token. See docs/decisions/0007-atomic-mode.md.
   */
  mode?: 'leased' | 'atomic';
  /**
   * Whether to read the key before anything else. The read decides nothing; it answers a retry
   * of a finished key without running the handler's transaction (atomic mode) or a locking
   * reservation (leased mode), and costs a first request a round trip.
   * - `'adaptive'` (default): read while more than one in 32 recent requests of the operation
   *   (this process) found their key taken, and right after the process starts.
   * - `true`: always read; `false`: never.
   * See docs/decisions/0007-atomic-mode.md.
   */
  precheck?: boolean | 'adaptive';
  /**
   * What a concurrent duplicate of a request still in flight gets. `false` (default): 409
   * `idempotency_key_in_use` with `Retry-After` at once. `{ timeoutMs }`: it waits up to
   * `timeoutMs` for the first request's stored result and replays it (past the bound, the 409);
   * if the first released the key, ONE waiter takes it over. An `unknown` outcome is never
   * waited for. See docs/reference.md, "How it works".
   */
  waitForResult?: WaitForResultPolicy | false;
  /**
   * Whose key it is, where the request names a principal (`getPrincipal`: a session, a user,
   * an API key). `'principal'` (default): the principal is part of what the key answers, so
   * another principal of the tenant sending the same key and input is refused (422
   * `idempotency_key_reused`) and never gets the first one's stored response. `'tenant'`: the
   * key is the tenant's, whoever sends it (a team-wide action retried from another seat).
   * Without a principal the scope is the tenant either way.
   */
  keyScope?: 'principal' | 'tenant';
}

/** The bound of `OperationPolicy.waitForResult`. */
export interface WaitForResultPolicy {
  /** Longest time a duplicate waits for the first request's result (1..120000 ms). */
  timeoutMs: number;
  /**
   * Longest pause between two reads of the key while waiting (the first reads come sooner,
   * doubling from 10 ms). Default 200 ms. Waiters in the same process as the first request are
   * woken as soon as it finishes, without waiting for the next read.
   */
  pollMs?: number;
}

/**
 * The states a key row can be in (`released` rows may run again; `expired` is a tombstone: a
 * completed key past its retention, within its `tombstoneMs`, answered with a refusal).
 */
export type KeyState = 'in_progress' | 'completed' | 'released' | 'unknown' | 'expired';

/** The recovery point of a key nothing has committed for yet. */
export const INITIAL_RECOVERY_POINT = 'started';

/** A key row as the store reports it. Times are the database's clock. */
export interface KeyRecord {
  state: KeyState;
  fingerprint: string;
  ownerToken: string | null;
  lockedUntil: Date | null;
  recoveryPoint: string;
  recoveryData: unknown;
  response: StoredResponse | null;
  /** Database time when the record was read (to compute Retry-After without clock skew). */
  now: Date;
}

/** Identity of a key: tenant first (sharding), then operation, then the client's key. */
export interface KeyIdentity {
  tenantId: string;
  operation: string;
  key: string;
}

/**
 * The key's identity, without whatever else `value` carries (an input, a request). A type
 * literal, not `KeyIdentity`: drizzle's placeholder values must be indexable.
 */
export function identity(value: KeyIdentity): { tenantId: string; operation: string; key: string } {
  return { tenantId: value.tenantId, operation: value.operation, key: value.key };
}

/**
 * Whose new-key allowance a key is counted against: a principal (a session, an API key) within
 * a tenant. The empty principal is the tenant as a whole.
 */
export interface RateLimitScope {
  tenantId: string;
  principal: string;
}

/** Input to the reservation (`IdempotencyStore.reserve`). */
export interface ReserveInput extends KeyIdentity {
  /** Whose allowance a created key is counted against (`RateLimitScope.principal`; default ''). */
  principal?: string;
  fingerprint: string;
  ownerToken: string;
  leaseMs: number;
  ttlMs: number;
  /** `OperationPolicy.tombstoneMs`; default 0. */
  tombstoneMs?: number;
  onExpiredLease: 'resume' | 'unknown';
  rateLimit: { maxNewKeys: number; windowMs: number } | undefined;
}

/**
 * What the reservation statement did:
 * - `acquired`: this attempt owns the key (new, released, or an expired lease taken over).
 * - `existing`: someone else's row, returned as-is so the engine can decide (replay/409/422).
 * - `rate_limited`: a new key would exceed the principal's cap; nothing was written.
 */
export type ReserveResult =
  | { kind: 'acquired'; record: KeyRecord; created: boolean; takenOver: boolean }
  | { kind: 'existing'; record: KeyRecord }
  | { kind: 'rate_limited'; retryAfterSeconds: number };

/**
 * What the atomic mode's read-only lookup found: the row, and whether a new attempt may write
 * it (released, completed but expired, or an expired lease at the initial recovery point).
 */
export interface KeyLookup {
  record: KeyRecord;
  /** The in-transaction completion would take this row over (same rules as the reservation). */
  writable: boolean;
}

/** Input of the atomic mode's in-transaction insert of a completed key. */
export interface InsertCompletedInput extends KeyIdentity {
  fingerprint: string;
  response: StoredResponse;
  ttlMs: number;
  /** `OperationPolicy.tombstoneMs`; default 0. */
  tombstoneMs?: number;
  /**
   * Bound, in ms, of this insert's wait for a concurrent duplicate's uncommitted key (the
   * statement's `lock_timeout`). Undefined: the connection's own `lock_timeout` applies.
   * Set by `waitForResult`.
   */
  lockWaitMs?: number;
}

/**
 * Result of the atomic mode's insert: `inserted` (this transaction now holds the completed
 * key), `conflict` (a concurrent transaction committed the key first: roll back and replay),
 * `lock_timeout` (waited longer than the connection's `lock_timeout` for that transaction).
 */
export type InsertCompletedResult = 'inserted' | 'conflict' | 'lock_timeout';

/** Input of the completer's takeover (`IdempotencyStore.claimResumable`). */
export interface ClaimResumableInput {
  operation: string;
  /** The completer attempt's new owner token. */
  ownerToken: string;
  leaseMs: number;
  /** Only leases ended at least this long ago. */
  graceMs: number;
}

/** Result of a holder-only write: done, or the owner token no longer matches. */
export type HolderWriteResult = 'ok' | 'lost';

/**
 * The persistence port the engine needs. `createDrizzleStore` implements it; every write that
 * changes a held key is guarded by the owner token.
 */
export interface IdempotencyStore<TTx> {
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /** Run `fn` in a transaction of the store's database. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>;
  complete(
    executor: TTx | undefined,
    id: KeyIdentity,
    ownerToken: string,
    response: StoredResponse,
    ttlMs: number,
  ): Promise<HolderWriteResult>;
  advance(
    executor: TTx | undefined,
    id: KeyIdentity,
    ownerToken: string,
    recoveryPoint: string,
    data: unknown,
  ): Promise<HolderWriteResult>;
  /** Extend the lease; `finished` when the key was already completed by this holder. */
  renew(
    id: KeyIdentity,
    ownerToken: string,
    leaseMs: number,
  ): Promise<HolderWriteResult | 'finished'>;
  /** No phase committed: the key may run again. */
  release(id: KeyIdentity, ownerToken: string): Promise<HolderWriteResult | 'finished'>;
  /** A phase committed and the policy is resume: end the lease now, keep the recovery point. */
  endLease(id: KeyIdentity, ownerToken: string): Promise<HolderWriteResult | 'finished'>;
  markUnknown(id: KeyIdentity, ownerToken: string): Promise<HolderWriteResult | 'finished'>;
  /** Whether this holder's completion is committed (after a completion inside the caller's tx). */
  isCompletedBy(id: KeyIdentity, ownerToken: string): Promise<boolean>;
  /**
   * The completer's takeover: ONE key of `operation` left at a recovery point past its lease
   * (`in_progress`, a phase committed, policy `resume`, lease ended `graceMs` ago or more), now
   * held by `ownerToken` for `leaseMs` as a retry's takeover would hold it (recovery point,
   * data and fingerprint kept); undefined when there is none. Two concurrent claims never get
   * the same key, and the old holder's writes are refused from then on. Optional: a store
   * without it cannot run a completer.
   */
  claimResumable?(
    input: ClaimResumableInput,
  ): Promise<{ id: KeyIdentity; record: KeyRecord } | undefined>;
  /** Atomic mode: one read-only primary-key lookup (no write, no commit). */
  lookup(id: KeyIdentity): Promise<KeyLookup | undefined>;
  /** Atomic mode: insert the key already completed, inside the caller's transaction. */
  insertCompleted(executor: TTx, input: InsertCompletedInput): Promise<InsertCompletedResult>;
  /**
   * Whether `executor` is a transaction, not the database itself. `exec.complete(tx, ...)`
   * refuses anything else before writing: a completion outside the business transaction would
   * commit on its own while that transaction may still roll back, and a retry would be told
   * the operation succeeded. Optional: without it, whatever `complete` is given is trusted.
   */
  isTransaction?(executor: TTx): boolean;
  /**
   * Count one new key of the scope in its own autocommit statement, only while the scope has
   * had fewer than `maxNewKeys` in the sliding `windowMs` (a burst of the cap, then one more per
   * `windowMs / maxNewKeys`), atomically (concurrent counts never pass the cap together);
   * `retryAfterSeconds` until one more fits when refused (nothing counted).
   */
  countNewKey(
    scope: RateLimitScope,
    limit: { maxNewKeys: number; windowMs: number },
  ): Promise<{ limited: false } | { limited: true; retryAfterSeconds: number }>;
  /**
   * Undo one `countNewKey` of the scope (never freeing more than was counted): the request it
   * counted stored no key. Optional: a store without it keeps the count (the cap then errs on
   * the strict side).
   */
  giveBackNewKey?(
    scope: RateLimitScope,
    limit: { maxNewKeys: number; windowMs: number },
  ): Promise<void>;
  /** Read-only: whether one more new key would be refused now, and for how long (the engines do not use it). */
  peekNewKeys(
    scope: RateLimitScope,
    limit: { maxNewKeys: number; windowMs: number },
  ): Promise<{ limited: false } | { limited: true; retryAfterSeconds: number }>;
}

/** Observability event names. */
export type IdempotencyEventType =
  | 'created'
  | 'replayed'
  | 'in_use'
  | 'reused'
  | 'expired'
  | 'unknown'
  | 'released'
  | 'completed'
  | 'lease_taken_over'
  | 'lease_lost'
  | 'store_error'
  | 'answer_unreadable'
  | 'reaped'
  | 'rate_limited'
  | 'swept'
  | 'resumed'
  | 'waited'
  | 'operator_released'
  | 'operator_evicted';

/**
 * One observable thing that happened. `durationMs` is set on `store_error`, on events that
 * end a reservation or a handler, and on `waited` (how long a duplicate waited, whatever it
 * got then); `count` on `reaped`/`swept`/`resumed` (keys a completer's pass completed).
 */
export interface IdempotencyEvent {
  type: IdempotencyEventType;
  tenantId?: string;
  operation?: string;
  durationMs?: number;
  count?: number;
  error?: unknown;
  /**
   * On `operator_released` / `operator_evicted`: who did what to which key, why and when (the
   * row written to `idempotency_key_audit`). Holds the key: keep it out of metric labels.
   */
  audit?: {
    key: string;
    action: 'release' | 'evict';
    actor: string;
    reason: string;
    fromState: KeyState;
    toState: 'released' | 'deleted';
    actedAt: Date;
  };
}
