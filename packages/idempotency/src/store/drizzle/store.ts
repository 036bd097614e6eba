import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import type {
  HolderWriteResult,
  IdempotencyStore,
  KeyIdentity,
  StoredResponse,
} from '../../core/types.ts';
import { insertCompletedKey, lookupKey } from './atomic-key.ts';
import { type AnyPgDatabase, rowsOf, type TransactionOf } from './drizzle-types.ts';
import { preparedStatement } from './prepared-statement.ts';
import { countNewKey } from './rate-limit-counter.ts';
import { reserveKey } from './reserve-key.ts';

const ms = (value: number | SQLWrapper) => sql`(${value}::float8 * interval '1 millisecond')`;
const p = sql.placeholder;

function identityValues(id: KeyIdentity) {
  return { tenantId: id.tenantId, operation: id.operation, key: id.key };
}

// The two statements of every leased request besides the reservation: built once, prepared per
// connection (see `preparedStatement`). The rarer holder writes below stay plain `execute`.
const heldByPlaceholders = sql`tenant_id = ${p('tenantId')} and operation = ${p('operation')}
    and key = ${p('key')} and state = 'in_progress' and owner_token = ${p('ownerToken')}`;

const completeStatement = preparedStatement(
  'once_idempotency_complete',
  sql`update idempotency_keys set state = 'completed', locked_until = null,
      response_status = ${p('status')}, response_headers = ${p('headers')}::jsonb,
      response_body = ${p('body')}, completed_at = now(), updated_at = now(),
      expires_at = now() + ${ms(p('ttlMs'))}
    where ${heldByPlaceholders} returning 1`,
);

const isCompletedByStatement = preparedStatement(
  'once_idempotency_is_completed_by',
  sql`select 1 from idempotency_keys
    where tenant_id = ${p('tenantId')} and operation = ${p('operation')} and key = ${p('key')}
      and state = 'completed' and owner_token = ${p('ownerToken')}`,
);

/** WHERE clause shared by every holder-only write: this key, still running, still ours. */
function heldBy(id: KeyIdentity, ownerToken: string): SQL {
  return sql`tenant_id = ${id.tenantId} and operation = ${id.operation} and key = ${id.key}
    and state = 'in_progress' and owner_token = ${ownerToken}`;
}

/**
 * The Postgres store on a drizzle database (postgres.js or node-postgres). Tables must exist:
 * add `idempotencyKeys`/`idempotencyRateLimits` to your schema, or run `idempotencySchemaSql`.
 *
 * The transaction type handed to `exec.complete(tx, ...)` is the one your `db.transaction`
 * gives you, so the stored response commits (or rolls back) with your business writes.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/postgres-js';
 * const db = drizzle(postgres(process.env.DATABASE_URL!));
 * const idempotency = createIdempotency({ store: createDrizzleStore(db) });
 */
export function createDrizzleStore<TDb extends AnyPgDatabase>(
  db: TDb,
): IdempotencyStore<TransactionOf<TDb>> {
  async function holderWrite(executor: AnyPgDatabase, statement: SQL): Promise<HolderWriteResult> {
    return rowsOf(await executor.execute(statement)).length > 0 ? 'ok' : 'lost';
  }

  async function isCompletedBy(id: KeyIdentity, ownerToken: string): Promise<boolean> {
    const rows = await isCompletedByStatement(db, { ...identityValues(id), ownerToken });
    return rows.length > 0;
  }

  /** A holder write that also reports `finished` when this holder already completed the key. */
  async function holderWriteOrFinished(
    id: KeyIdentity,
    ownerToken: string,
    statement: SQL,
  ): Promise<HolderWriteResult | 'finished'> {
    if ((await holderWrite(db, statement)) === 'ok') return 'ok';
    return (await isCompletedBy(id, ownerToken)) ? 'finished' : 'lost';
  }

  return {
    reserve: (input) => reserveKey(db, input),

    transaction: (fn) => db.transaction((tx) => fn(tx as TransactionOf<TDb>)) as Promise<never>,

    async complete(executor, id, ownerToken, response: StoredResponse, ttlMs) {
      const rows = await completeStatement((executor as AnyPgDatabase | undefined) ?? db, {
        ...identityValues(id),
        ownerToken,
        status: response.status,
        headers: JSON.stringify(response.headers),
        body: response.body,
        ttlMs,
      });
      return rows.length > 0 ? 'ok' : 'lost';
    },

    advance(executor, id, ownerToken, recoveryPoint, data) {
      return holderWrite(
        (executor as AnyPgDatabase | undefined) ?? db,
        sql`update idempotency_keys set recovery_point = ${recoveryPoint},
            recovery_data = ${JSON.stringify(data ?? null)}::jsonb, updated_at = now()
          where ${heldBy(id, ownerToken)} returning 1`,
      );
    },

    renew: (id, ownerToken, leaseMs) =>
      holderWriteOrFinished(
        id,
        ownerToken,
        sql`update idempotency_keys set locked_until = now() + ${ms(leaseMs)}, updated_at = now()
          where ${heldBy(id, ownerToken)} returning 1`,
      ),

    release: (id, ownerToken) =>
      holderWriteOrFinished(
        id,
        ownerToken,
        sql`update idempotency_keys set state = 'released', owner_token = null, locked_until = null,
            recovery_point = 'started', recovery_data = null, updated_at = now()
          where ${heldBy(id, ownerToken)} and recovery_point = 'started' returning 1`,
      ),

    endLease: (id, ownerToken) =>
      holderWriteOrFinished(
        id,
        ownerToken,
        sql`update idempotency_keys set locked_until = now(), updated_at = now()
          where ${heldBy(id, ownerToken)} returning 1`,
      ),

    markUnknown: (id, ownerToken) =>
      holderWriteOrFinished(
        id,
        ownerToken,
        sql`update idempotency_keys set state = 'unknown', owner_token = null, locked_until = null, updated_at = now()
          where ${heldBy(id, ownerToken)} returning 1`,
      ),

    isCompletedBy,

    lookup: (id) => lookupKey(db, id),

    insertCompleted: (executor, input) =>
      insertCompletedKey(executor as unknown as AnyPgDatabase, input),

    async countNewKey(tenantId, limit) {
      const counter = await countNewKey(db, tenantId, limit.windowMs);
      if (counter.newKeys <= limit.maxNewKeys) return { limited: false };
      return {
        limited: true,
        retryAfterSeconds: Math.max(1, Math.ceil(counter.retryAfterMs / 1000)),
      };
    },
  };
}
