import { type SQL, sql } from 'drizzle-orm';
import {
  type IdempotencyEvent,
  identity,
  type KeyIdentity,
  type KeyState,
  type StoredResponse,
} from '../../../core/types.ts';
import { type AnswerEncryption, answerCodec } from '../answer-codec.ts';
import { type AnyPgDatabase, rowsOf } from '../drizzle-types.ts';
import { RESPONSE_BODY } from '../key-record-sql.ts';
import {
  isExpiredLease,
  NO_HOLDER,
  operatorMayEvict,
  operatorMayRelease,
  START_OVER,
  STATE,
} from '../key-state-machine.ts';
import { KeyOperatorError } from './key-operator-error.ts';

const FINGERPRINT_PREFIX_CHARS = 12;
const LEASE_OWNER_PREFIX_CHARS = 8;
const MAX_LIST_LIMIT = 500;
const MAX_TEXT_CHARS = 1_000;

/**
 * A key as an operator sees it. Never the stored response body (it may hold customer data;
 * `inspect` adds it on request), never the whole owner token (it is the holder's write
 * capability) nor the whole fingerprint.
 */
export interface KeySummary {
  tenantId: string;
  operation: string;
  key: string;
  state: KeyState;
  recoveryPoint: string;
  attempts: number;
  /** First 8 characters of the owner token of the holding (or, once completed, the completing) attempt; null for atomic or released keys. */
  leaseOwner: string | null;
  lockedUntil: Date | null;
  /** `in_progress` whose lease ran out (database clock): its holder stopped renewing. */
  leaseExpired: boolean;
  onExpiredLease: 'resume' | 'unknown';
  /** How the current or last holder got the key: insert, released, expired_lease, ... */
  acquiredVia: string;
  /** Status of the stored response (completed keys), never its body. */
  responseStatus: number | null;
  /** First 12 hex characters of the request fingerprint: enough to compare two requests. */
  fingerprintPrefix: string;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  expiresAt: Date;
  /**
   * Compare-and-set token of exactly this version of the row: pass it back to `release` /
   * `evict`, which refuse with `key_changed` if the key moved on since it was read.
   */
  revision: string;
  /** Whether `release` would accept this key now (the rules on `KeyOperator`). */
  releasable: boolean;
  /** Whether `evict` would accept this key now. */
  evictable: boolean;
}

/**
 * A key with its stored response, for `inspect(id, { includeResponse })`. `keyId` names the
 * key an encrypted body is sealed with (its `body` is then ciphertext unless `'decrypted'`
 * was asked for); null when the body is stored in clear.
 */
export interface KeyDetails extends KeySummary {
  response?: (StoredResponse & { keyId: string | null }) | null;
}

/**
 * Which keys `list` returns: always ONE tenant (every statement is tenant-first), newest
 * change first.
 */
export interface ListKeysFilter {
  tenantId: string;
  operation?: string;
  state?: KeyState;
  /** Keys starting with this text. */
  keyPrefix?: string;
  /** 1..500, default 50. */
  limit?: number;
}

/** Who acts, why, and on which version of the key (the `revision` the operator saw). */
export interface OperatorActionInput {
  revision: string;
  /** Who (an operator's id as your authentication knows it). 1..1000 characters. */
  actor: string;
  /** Why, in words a later reader understands. 1..1000 characters. */
  reason: string;
}

/**
 * The audit record of one operator action: written to `idempotency_key_audit` in the same
 * transaction as the action, and emitted through `onEvent`.
 */
export interface KeyAuditEntry extends KeyIdentity {
  action: 'release' | 'evict';
  actor: string;
  reason: string;
  fromState: KeyState;
  toState: 'released' | 'deleted';
  recoveryPoint: string;
  attempts: number;
  fingerprintPrefix: string;
  responseStatus: number | null;
  keyCreatedAt: Date;
  actedAt: Date;
}

/**
 * What operators may do with keys. Release rules: an `in_progress` key whose lease EXPIRED and
 * that committed NO phase (what the sweeper would do, sooner), or an `unknown` key the operator
 * reconciled as "nothing happened"; never a live lease, an expired lease with committed phases
 * (a committed phase must not run twice; the next retry resumes it), or a finished key. Evict
 * rules: `completed` or `released` keys only (deleted before their retention ends, so the next
 * request with the key RUNS AGAIN; for a stored decline after the card was fixed, or a
 * response a bug stored). Every action needs an actor and a reason, is guarded by the
 * revision the operator saw, and is audited.
 */
export interface KeyOperator {
  list(filter: ListKeysFilter): Promise<KeySummary[]>;
  /**
   * `includeResponse: true` adds the response as stored (an encrypted body stays ciphertext);
   * `'decrypted'` opens it with the operator's `encryption` (`idempotency_answer_unreadable`
   * when its key is not there).
   */
  inspect(
    id: KeyIdentity,
    options?: { includeResponse?: boolean | 'decrypted' },
  ): Promise<KeyDetails | undefined>;
  release(id: KeyIdentity, input: OperatorActionInput): Promise<KeyAuditEntry>;
  evict(id: KeyIdentity, input: OperatorActionInput): Promise<KeyAuditEntry>;
}

/** The revision of a row: changes with every write a key ever sees (state, holder, phase, attempt, time). */
function revisionOf(k: string): SQL {
  const c = (column: string) => sql.raw(`${k}.${column}`);
  return sql`left(md5(concat_ws('|', ${c('state')}, coalesce(${c('owner_token')}, ''), ${c('recovery_point')},
    ${c('attempts')}::text, (extract(epoch from ${c('updated_at')}) * 1000000)::bigint::text)), 16)`;
}

/** Every `KeySummary` field under its own name; times as epoch milliseconds, the one form both drivers return alike. */
function summaryColumns(k: string): SQL {
  const c = (column: string) => sql.raw(`${k}.${column}`);
  const ms = (column: string) => sql`(extract(epoch from ${c(column)}) * 1000)::float8`;
  return sql`${c('tenant_id')} as "tenantId", ${c('operation')} as "operation", ${c('key')} as "key",
    ${c('state')} as "state", ${c('recovery_point')} as "recoveryPoint", ${c('attempts')} as "attempts",
    left(${c('owner_token')}, ${LEASE_OWNER_PREFIX_CHARS}) as "leaseOwner",
    ${ms('locked_until')} as "lockedUntil", coalesce(${isExpiredLease(k)}, false) as "leaseExpired",
    ${c('on_expired_lease')} as "onExpiredLease", ${c('acquired_via')} as "acquiredVia",
    ${c('response_status')} as "responseStatus",
    left(${c('fingerprint')}, ${FINGERPRINT_PREFIX_CHARS}) as "fingerprintPrefix",
    ${ms('created_at')} as "createdAt", ${ms('updated_at')} as "updatedAt",
    ${ms('completed_at')} as "completedAt", ${ms('expires_at')} as "expiresAt",
    ${revisionOf(k)} as "revision", ${operatorMayRelease(k)} as "releasable",
    ${operatorMayEvict(k)} as "evictable"`;
}

const DATE_FIELDS = ['lockedUntil', 'createdAt', 'updatedAt', 'completedAt', 'expiresAt'] as const;
type SummaryRow = Omit<KeySummary, (typeof DATE_FIELDS)[number]> &
  Record<(typeof DATE_FIELDS)[number], number | string | null>;

function toSummary<Row extends SummaryRow>(row: Row): Omit<Row, keyof KeySummary> & KeySummary {
  const summary = { ...row } as Record<string, unknown>;
  for (const field of DATE_FIELDS) {
    const ms = row[field];
    summary[field] = ms === null ? null : new Date(Number(ms));
  }
  return summary as Omit<Row, keyof KeySummary> & KeySummary;
}

function requireText(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_TEXT_CHARS)
    throw new KeyOperatorError('invalid_input', `${name} must be 1..${MAX_TEXT_CHARS} characters`);
  return value;
}

function requireIdentity(id: KeyIdentity): void {
  requireText('tenantId', id.tenantId);
  requireText('operation', id.operation);
  requireText('key', id.key);
}

/**
 * Key inspection and eviction for operators, on the same database as the store. Every action
 * runs in one transaction: lock the row, compare its revision with the one the operator saw,
 * check the rule, act, write the audit row; then `onEvent` gets an `operator_released` /
 * `operator_evicted` event carrying the audit entry.
 *
 * @example
 * const operator = createKeyOperator(db, { onEvent: (e) => log.info(e) });
 * const [seen] = await operator.list({ tenantId, state: 'unknown' });
 * if (seen?.releasable)
 *   await operator.release(seen, { revision: seen.revision, actor: 'ops:alice', reason: 'ledger shows no charge' });
 */
export function createKeyOperator(
  db: AnyPgDatabase,
  options: {
    onEvent?: (event: IdempotencyEvent) => void;
    /** The store's `encryption`: only `inspect(id, { includeResponse: 'decrypted' })` uses it. */
    encryption?: AnswerEncryption;
  } = {},
): KeyOperator {
  const codec = answerCodec(options.encryption);
  async function readForUpdate(executor: AnyPgDatabase, id: KeyIdentity) {
    const [row] = rowsOf<SummaryRow & { fingerprint: string }>(
      await executor.execute(
        sql`select ${summaryColumns('k')}, k.fingerprint from idempotency_keys k
          where ${thisKey(id)} for update`,
      ),
    );
    return row && toSummary(row);
  }

  async function act(
    action: 'release' | 'evict',
    id: KeyIdentity,
    input: OperatorActionInput,
  ): Promise<KeyAuditEntry> {
    requireIdentity(id);
    const actor = requireText('actor', input.actor);
    const reason = requireText('reason', input.reason);
    const revision = requireText('revision', input.revision);
    const entry = await db.transaction(async (tx) => {
      const executor = tx as unknown as AnyPgDatabase;
      const row = await readForUpdate(executor, id);
      if (!row) throw new KeyOperatorError('key_not_found', `No key ${describe(id)}`);
      if (row.revision !== revision) {
        throw new KeyOperatorError(
          'key_changed',
          `Key ${describe(id)} changed since it was read (now ${row.state}); look again before acting`,
        );
      }
      if (action === 'release' && !row.releasable) {
        throw new KeyOperatorError('key_not_releasable', notReleasableBecause(row));
      }
      if (action === 'evict' && !row.evictable) {
        throw new KeyOperatorError(
          'key_not_evictable',
          `Key ${describe(id)} is ${row.state}: only completed or released keys may be evicted`,
        );
      }
      // The same rule again in the write itself: the row is locked, so this is belt and braces.
      const changed =
        action === 'release'
          ? await executor.execute(
              sql`update idempotency_keys k set state = ${STATE.released}, ${NO_HOLDER}, ${START_OVER},
                updated_at = now() where ${thisKey(id)} and ${operatorMayRelease('k')} returning 1`,
            )
          : await executor.execute(
              sql`delete from idempotency_keys k where ${thisKey(id)}
                and ${operatorMayEvict('k')} returning 1`,
            );
      if (rowsOf(changed).length !== 1)
        throw new KeyOperatorError('key_changed', `Key ${describe(id)} changed while acting`);
      const [audit] = rowsOf<{ acted_at_ms: number | string }>(
        await executor.execute(
          sql`insert into idempotency_key_audit (tenant_id, operation, key, action, actor, reason,
              from_state, to_state, recovery_point, attempts, fingerprint, response_status, key_created_at)
            values (${id.tenantId}, ${id.operation}, ${id.key}, ${action}, ${actor}, ${reason},
              ${row.state}, ${action === 'release' ? 'released' : 'deleted'}, ${row.recoveryPoint},
              ${row.attempts}, ${row.fingerprint}, ${row.responseStatus},
              to_timestamp(${row.createdAt.getTime()}::float8 / 1000))
            returning (extract(epoch from acted_at) * 1000)::float8 as acted_at_ms`,
        ),
      );
      return {
        ...identity(id),
        action,
        actor,
        reason,
        fromState: row.state,
        toState: action === 'release' ? 'released' : 'deleted',
        recoveryPoint: row.recoveryPoint,
        attempts: row.attempts,
        fingerprintPrefix: row.fingerprintPrefix,
        responseStatus: row.responseStatus,
        keyCreatedAt: row.createdAt,
        actedAt: new Date(Number(audit?.acted_at_ms ?? Date.now())),
      } satisfies KeyAuditEntry;
    });
    try {
      options.onEvent?.({
        type: action === 'release' ? 'operator_released' : 'operator_evicted',
        tenantId: id.tenantId,
        operation: id.operation,
        audit: entry,
      });
    } catch {
      // Observability must never change the outcome: the action and its audit row committed.
    }
    return entry;
  }

  return {
    async list(filter) {
      requireText('tenantId', filter.tenantId);
      const limit = filter.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
        throw new KeyOperatorError('invalid_input', `limit must be 1..${MAX_LIST_LIMIT}`);
      const where = [sql`k.tenant_id = ${filter.tenantId}`];
      if (filter.operation !== undefined) where.push(sql`k.operation = ${filter.operation}`);
      if (filter.state !== undefined) where.push(sql`k.state = ${filter.state}`);
      if (filter.keyPrefix) where.push(sql`starts_with(k.key, ${filter.keyPrefix})`);
      const rows = rowsOf<SummaryRow>(
        await db.execute(
          sql`select ${summaryColumns('k')} from idempotency_keys k
            where ${sql.join(where, sql` and `)}
            order by k.updated_at desc, k.operation, k.key limit ${limit}`,
        ),
      );
      return rows.map((row) => toSummary(row));
    },

    async inspect(id, inspectOptions = {}) {
      requireIdentity(id);
      const [row] = rowsOf<
        SummaryRow & {
          responseHeaders: string | null;
          responseBody: string | null;
          responseKeyId: string | null;
        }
      >(
        await db.execute(
          sql`select ${summaryColumns('k')}, k.response_headers::text as "responseHeaders",
              k.response_body as "responseBody", k.response_key_id as "responseKeyId"
              from idempotency_keys k where ${thisKey(id)}`,
        ),
      );
      if (!row) return undefined;
      const { responseHeaders, responseBody, responseKeyId, ...summary } = toSummary(row);
      const details: KeyDetails = summary;
      const { includeResponse } = inspectOptions;
      if (includeResponse) {
        const sealed = { text: responseBody, keyId: responseKeyId };
        details.response =
          summary.responseStatus === null
            ? null
            : {
                status: summary.responseStatus,
                headers: responseHeaders ? JSON.parse(responseHeaders) : {},
                body:
                  includeResponse === 'decrypted'
                    ? codec.open(id, RESPONSE_BODY, sealed)
                    : responseBody,
                keyId: responseKeyId,
              };
      }
      return details;
    },

    release: (id, input) => act('release', id, input),
    evict: (id, input) => act('evict', id, input),
  };
}

/** The key's identity with its values (these statements run once each, not prepared). */
function thisKey(id: KeyIdentity): SQL {
  return sql`k.tenant_id = ${id.tenantId} and k.operation = ${id.operation} and k.key = ${id.key}`;
}

function describe(id: KeyIdentity): string {
  return `${id.operation}/${id.key}`;
}

function notReleasableBecause(row: KeySummary): string {
  const key = `${row.operation}/${row.key}`;
  if (row.state === 'in_progress' && !row.leaseExpired)
    return `Key ${key} is running (its lease is live): it cannot be released`;
  if (row.state === 'in_progress')
    return `Key ${key} committed phase ${row.recoveryPoint}: releasing would run it again; the next retry resumes it`;
  return `Key ${key} is ${row.state}: only an expired lease that committed nothing, or an unknown key, may be released`;
}
