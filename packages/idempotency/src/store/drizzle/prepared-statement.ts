import { entityKind, is, type SQL } from 'drizzle-orm';
import { PgDialect, PgTransaction } from 'drizzle-orm/pg-core';
import { causeChain } from '../../core/cause-chain.ts';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';

/** The SQL text of every statement is the same for every Postgres driver: build it once. */
const dialect = new PgDialect();

/**
 * A hot statement of the store, built ONCE (text + placeholder slots) instead of on every call,
 * and run as a named prepared statement on postgres.js.
 *
 * WHY: `db.execute(sql...)` rebuilds the query from its template on every call, and drizzle
 * runs it on postgres.js as an UNNAMED statement. For an unnamed statement with parameters
 * postgres.js first sends Parse + Describe, waits for the server's parameter types, and only then sends Bind + Execute: two round trips (two socket
 * writes, two backend wake-ups) per statement. A named statement is described once per pooled
 * connection and then costs one Bind + Execute. postgres.js still decides: a client created
 * with `prepare: false` (PgBouncer in transaction mode) keeps unnamed statements.
 * node-postgres sends an unnamed statement in one round trip already, so there it stays
 * unnamed (named statements break behind a transaction-pooling PgBouncer).
 */
export function preparedStatement<TRow = Record<string, unknown>>(
  name: string,
  statement: SQL,
): (executor: AnyPgDatabase, values: Record<string, unknown>) => Promise<TRow[]> {
  const query = dialect.sqlToQuery(statement);
  return async (executor, values) => {
    const session = executor._.session;
    const named = sessionKind(session) === 'PostgresJsSession' ? name : undefined;
    const prepared = session.prepareQuery(query, undefined, named, false);
    // Alone (autocommit), a statement that failed serialization wrote nothing: run it again on
    // a newer snapshot. In the caller's transaction, only the caller can retry (all of it).
    for (let attempt = 1; ; attempt++) {
      try {
        return rowsOf<TRow>(await prepared.execute(values));
      } catch (error) {
        if (attempt === 10 || is(executor, PgTransaction) || !isSerializationFailure(error))
          throw error;
      }
    }
  };
}

/**
 * SQLSTATE 40001: under REPEATABLE READ or SERIALIZABLE, the row this statement meets changed
 * after its snapshot (or SSI found a dangerous structure). The transaction rolled back.
 */
export function isSerializationFailure(error: unknown): boolean {
  return causeChain(error).some((e) => e.code === '40001');
}

function sessionKind(session: object): string | undefined {
  return (session.constructor as { [entityKind]?: string })[entityKind];
}
