import { sql } from 'drizzle-orm';
import { causeChain } from '../../core/cause-chain.ts';
import type { IdempotencyStore } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';

/** PostgreSQL's SQLSTATE for "relation does not exist". */
const UNDEFINED_TABLE = '42P01';

/** The one line that says what to run when the tables are not there. */
export const MISSING_TABLES_MESSAGE =
  "[@once/idempotency] the idempotency tables do not exist in this database: add `export * from '@once/idempotency/drizzle/schema'` to your Drizzle schema and run `drizzle-kit generate` then `drizzle-kit migrate` (or execute `idempotencySchemaSql` once)";

/** The driver's error, or the one line above (with the driver's error as its cause). */
export function explained(error: unknown): unknown {
  return causeChain(error).some((e) => e.code === UNDEFINED_TABLE)
    ? new Error(MISSING_TABLES_MESSAGE, { cause: error })
    : error;
}

/**
 * Fails at start, in one line, when the tables are missing (instead of every request answering
 * 503 "store unavailable").
 */
export async function checkIdempotencyTables(db: AnyPgDatabase): Promise<void> {
  try {
    await db.execute(
      sql`select from idempotency_keys, idempotency_rate_limits, idempotency_key_audit limit 0`,
    );
  } catch (error) {
    throw explained(error);
  }
}

/** Methods that only hand the caller's own callback a transaction: its errors are the app's. */
const NOT_OURS = new Set(['transaction', 'isTransaction']);

/**
 * The store, with every statement's "relation does not exist" turned into the one line above,
 * logged once: a request on a database without the tables still answers 503, and the log
 * says why.
 */
export function explainMissingTables<TTx>(store: IdempotencyStore<TTx>): IdempotencyStore<TTx> {
  let logged = false;
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(store)) {
    if (NOT_OURS.has(name) || typeof method !== 'function') {
      wrapped[name] = method;
      continue;
    }
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await (method as (...a: unknown[]) => Promise<unknown>)(...args);
      } catch (error) {
        const reason = explained(error);
        if (reason !== error && !logged) {
          logged = true;
          console.error(MISSING_TABLES_MESSAGE);
        }
        throw reason;
      }
    };
  }
  return wrapped as unknown as IdempotencyStore<TTx>;
}
