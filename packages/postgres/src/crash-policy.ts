import { isDiscardedDriverConnectionError, isPostgresNullSocketWrite } from './replaceable-pool.ts';

interface DatabaseCrashPolicy {
  /**
   * Swaps the database pool: the postgres.js 3.4.9 null-socket write (porsager/postgres#1154)
   * was thrown from a setImmediate, and the connection it hit may never flush again.
   */
  replacePool(reason: string): void;
  /** Any other uncaught exception: a bug in this program. Usually: log it and exit 1. */
  onUncaughtBug(error: Error): void;
  /**
   * An unhandled rejection; `fromDriver` is true for the array-type query postgres.js runs on
   * every new connection and discards (porsager/postgres#1192): nothing waited on it, so it
   * is survivable. Omit to keep Node's default (the rejection becomes an uncaught exception).
   */
  onUnhandledRejection?(reason: unknown, fromDriver: boolean): void;
}

/** The reason handed to `replacePool` after the null-socket write. */
const NULL_SOCKET_WRITE_REASON = 'postgres.js null-socket write after a dropped connection';

/**
 * What a long-lived process does with an error nobody caught, in one place for the web app,
 * the worker and the processor. Two postgres.js 3.4.9 defects fire when a backend dies
 * (pg_terminate_backend, a PostgreSQL restart) and are survivable: the null-socket write
 * (swap the pool, keep serving) and the discarded type query's rejection. Everything else
 * goes to the process's own handlers, which decide whether to die.
 *
 * @example
 * installDatabaseCrashPolicy({
 *   replacePool: (reason) => database.replace(reason),
 *   onUncaughtBug: (error) => { log(`crashed: ${error.stack}`); process.exit(1); },
 * });
 */
export function installDatabaseCrashPolicy(policy: DatabaseCrashPolicy): void {
  process.on('uncaughtException', (error) => {
    if (isPostgresNullSocketWrite(error)) {
      policy.replacePool(NULL_SOCKET_WRITE_REASON);
      return;
    }
    policy.onUncaughtBug(error);
  });
  const { onUnhandledRejection } = policy;
  if (onUnhandledRejection) {
    process.on('unhandledRejection', (reason) =>
      onUnhandledRejection(reason, isDiscardedDriverConnectionError(reason)),
    );
  }
}
