import postgres from 'postgres';
import { publishPoolNotice } from './pool-notices.ts';

export interface CreateDatabaseClientOptions {
  /** Shown in pg_stat_activity, so an operator can tell web, worker and tests apart. */
  applicationName: string;
  /** Pool size. */
  max?: number;
  /** Per-statement limit; a hung query must not hold a request forever. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
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
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: publishPoolNotice,
    connect_timeout: 10,
    idle_timeout: 60,
    connection: {
      application_name: options.applicationName,
      statement_timeout: options.statementTimeoutMs ?? 15_000,
      lock_timeout: options.lockTimeoutMs ?? 5_000,
      // A transaction left open by a stalled process is ended by the server.
      idle_in_transaction_session_timeout: 30_000,
    },
  });
}
