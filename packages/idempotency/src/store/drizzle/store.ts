import { is, sql } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import type {
  HolderWriteResult,
  IdempotencyStore,
  KeyIdentity,
  StoredResponse,
} from '../../core/types.ts';
import { type AnswerEncryption, answerCodec } from './answer-codec.ts';
import { insertCompletedKey, lookupKey } from './atomic-key.ts';
import { claimResumable } from './claim-resumable.ts';
import type { AnyPgDatabase, TransactionOf } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { RESPONSE_BODY } from './key-record-sql.ts';
import {
  heldValues,
  isHeldBy,
  isKey,
  NO_HOLDER,
  nothingCommitted,
  START_OVER,
  STATE,
} from './key-state-machine.ts';
import { explainMissingTables } from './missing-tables.ts';
import { preparedStatement } from './prepared-statement.ts';
import { countNewKey, giveBackNewKey, peekNewKeys } from './rate-limit-counter.ts';
import { reserveKey } from './reserve-key.ts';

const p = sql.placeholder;

const heldBy = isHeldBy('k');

const completeStatement = preparedStatement(
  'once_idempotency_complete',
  sql`update idempotency_keys k set state = ${STATE.completed}, locked_until = null,
      response_status = ${p('status')}, response_headers = ${p('headers')}::jsonb,
      response_body = ${p('body')}, response_key_id = ${p('bodyKeyId')},
      completed_at = now(), updated_at = now(), expires_at = now() + ${msInterval(p('ttlMs'))}
    where ${heldBy} returning 1`,
);

const isCompletedByStatement = preparedStatement(
  'once_idempotency_is_completed_by',
  sql`select 1 from idempotency_keys k
    where ${isKey('k')} and k.state = ${STATE.completed} and k.owner_token = ${p('ownerToken')}`,
);

const advanceStatement = preparedStatement(
  'once_idempotency_advance',
  sql`update idempotency_keys k set recovery_point = ${p('recoveryPoint')},
      recovery_data = ${p('data')}::jsonb, updated_at = now()
    where ${heldBy} returning 1`,
);

const renewStatement = preparedStatement(
  'once_idempotency_renew',
  sql`update idempotency_keys k set locked_until = now() + ${msInterval(p('leaseMs'))}, updated_at = now()
    where ${heldBy} returning 1`,
);

/** Only a holder that committed nothing may release: a committed phase must never run twice. */
const releaseStatement = preparedStatement(
  'once_idempotency_release',
  sql`update idempotency_keys k set state = ${STATE.released}, ${NO_HOLDER}, ${START_OVER}, updated_at = now()
    where ${heldBy} and ${nothingCommitted('k')} returning 1`,
);

const endLeaseStatement = preparedStatement(
  'once_idempotency_end_lease',
  sql`update idempotency_keys k set locked_until = now(), updated_at = now()
    where ${heldBy} returning 1`,
);

const markUnknownStatement = preparedStatement(
  'once_idempotency_mark_unknown',
  sql`update idempotency_keys k set state = ${STATE.unknown}, ${NO_HOLDER}, updated_at = now()
    where ${heldBy} returning 1`,
);

type HolderStatement = ReturnType<typeof preparedStatement>;

/**
 * The Postgres store on a drizzle database (postgres.js or node-postgres). Tables must exist:
 * add `idempotencyKeys`/`idempotencyRateLimits` to your schema, or run `idempotencySchemaSql`.
 *
 * The transaction type handed to `exec.complete(tx, ...)` is the one your `db.transaction`
 * gives you, so the stored response commits (or rolls back) with your business writes.
 * With `encryption`, stored response bodies are sealed with its current key (AES-256-GCM) and
 * opened with the key whose id the row names; a row whose key is missing is refused
 * (`idempotency_answer_unreadable`), never replayed or run again.
 *
 * @example
 * import { drizzle } from 'drizzle-orm/postgres-js';
 * const db = drizzle(postgres(process.env.DATABASE_URL!));
 * const idempotency = createIdempotency({ store: createDrizzleStore(db) });
 */
export function createDrizzleStore<TDb extends AnyPgDatabase>(
  db: TDb,
  options: { encryption?: AnswerEncryption } = {},
): IdempotencyStore<TransactionOf<TDb>> {
  const codec = answerCodec(options.encryption);
  async function isCompletedBy(id: KeyIdentity, ownerToken: string): Promise<boolean> {
    const rows = await isCompletedByStatement(db, heldValues(id, ownerToken));
    return rows.length > 0;
  }

  /**
   * A holder write that also reports `finished` when this holder already completed the key.
   * `values` are the statement's placeholder values: `heldValues` unless it reads more.
   */
  async function holderWriteOrFinished(
    statement: HolderStatement,
    id: KeyIdentity,
    ownerToken: string,
    values: Record<string, unknown> = heldValues(id, ownerToken),
  ): Promise<HolderWriteResult | 'finished'> {
    const rows = await statement(db, values);
    if (rows.length > 0) return 'ok';
    return (await isCompletedBy(id, ownerToken)) ? 'finished' : 'lost';
  }

  return explainMissingTables({
    reserve: (input) => reserveKey(db, input, codec),

    transaction: (fn) => db.transaction((tx) => fn(tx as TransactionOf<TDb>)) as Promise<never>,

    async complete(executor, id, ownerToken, response: StoredResponse, ttlMs) {
      const body = codec.seal(id, RESPONSE_BODY, response.body);
      const rows = await completeStatement((executor as AnyPgDatabase | undefined) ?? db, {
        ...heldValues(id, ownerToken),
        status: response.status,
        headers: JSON.stringify(response.headers),
        body: body.text,
        bodyKeyId: body.keyId,
        ttlMs,
      });
      return rows.length > 0 ? 'ok' : 'lost';
    },

    async advance(executor, id, ownerToken, recoveryPoint, data) {
      const rows = await advanceStatement((executor as AnyPgDatabase | undefined) ?? db, {
        ...heldValues(id, ownerToken),
        recoveryPoint,
        data: JSON.stringify(data ?? null),
      });
      return rows.length > 0 ? 'ok' : 'lost';
    },

    renew: (id, ownerToken, leaseMs) =>
      holderWriteOrFinished(renewStatement, id, ownerToken, {
        ...heldValues(id, ownerToken),
        leaseMs,
      }),

    release: (id, ownerToken) => holderWriteOrFinished(releaseStatement, id, ownerToken),

    endLease: (id, ownerToken) => holderWriteOrFinished(endLeaseStatement, id, ownerToken),

    markUnknown: (id, ownerToken) => holderWriteOrFinished(markUnknownStatement, id, ownerToken),

    isCompletedBy,

    claimResumable: (input) => claimResumable(db, input, codec),

    lookup: (id) => lookupKey(db, id, codec),

    insertCompleted: (executor, input) =>
      insertCompletedKey(executor as unknown as AnyPgDatabase, input, codec),

    // `is` checks drizzle's entity kind, so a second copy of drizzle-orm still answers right.
    isTransaction: (executor) => is(executor, PgTransaction),

    countNewKey: (scope, limit) => countNewKey(db, scope, limit),

    giveBackNewKey: (scope, limit) => giveBackNewKey(db, scope, limit),

    peekNewKeys: (scope, limit) => peekNewKeys(db, scope, limit),
  });
}
