import postgres from 'postgres';
import { publishPoolNotice } from './pool-notices.ts';

/**
 * `session`: each client connection is a server session of its own (PostgreSQL itself, or a
 * pooler in session mode). `transaction`: a transaction-mode pooler (PgBouncer), where nothing
 * a session holds survives its transaction.
 */
export type PoolMode = 'session' | 'transaction';

/** What every pool's connections run with: a hung query, a stuck lock or a transaction left open fails instead of holding a row. */
export const SESSION_TIMEOUTS_MS = {
  statement_timeout: 15_000,
  lock_timeout: 5_000,
  idle_in_transaction_session_timeout: 30_000,
} as const;

export interface CreateDatabaseClientOptions {
  /** Shown in pg_stat_activity, so an operator can tell web, worker and tests apart. */
  applicationName: string;
  /** Pool size. */
  max?: number;
  /** Overrides the per-statement limit (session mode only: see `poolMode`). */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  /**
   * `transaction`: no named prepared statements and no settings at connect (PgBouncer refuses
   * them: 08P01); the timeouts come from the role (`applyMigrations` with `poolMode`).
   */
  poolMode?: PoolMode;
}

/**
 * The one way processes open a PostgreSQL pool: postgres.js with timeouts on every
 * connection, so a dead peer or a stuck lock fails fast instead of hanging. It loads no
 * schema, so the processor (its own database and schema) uses it too. A replicated cluster
 * is one multi-host URL with `target_session_attrs=primary`
 * (`postgres://u:p@h1:5432,h2:5432,h3:5432/db?target_session_attrs=primary`): postgres.js
 * tries the hosts in order on every new connection and keeps the one not in recovery; after a
 * failover the old primary's connections break and the next ones find the new primary.
 * Notices go to `subscribePoolNotices`.
 *
 * @example
 * const sql = openPostgresPool(url, { applicationName: 'once-processor' });
 */
export function openPostgresPool(url: string, options: CreateDatabaseClientOptions): postgres.Sql {
  const pooled = options.poolMode === 'transaction';
  if (pooled && (options.statementTimeoutMs ?? options.lockTimeoutMs) !== undefined) {
    throw new Error('a transaction-mode pool takes its timeouts from the role, not per pool');
  }
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: publishPoolNotice,
    connect_timeout: 10,
    idle_timeout: 60,
    prepare: !pooled,
    // A query pipelined behind another is answered after PgBouncer may have given the server
    // back (at a ReadyForQuery outside a transaction): the answer is dropped and the connection
    // waits for ever. Through a transaction pooler each connection sends one query at a time.
    ...(pooled ? { max_pipeline: 0 } : {}),
    connection: {
      application_name: options.applicationName,
      ...(pooled
        ? {}
        : {
            ...SESSION_TIMEOUTS_MS,
            statement_timeout: options.statementTimeoutMs ?? SESSION_TIMEOUTS_MS.statement_timeout,
            lock_timeout: options.lockTimeoutMs ?? SESSION_TIMEOUTS_MS.lock_timeout,
          }),
    },
  });
}
