import { isDiscardedDriverConnectionError, isPostgresNullSocketWrite } from '@once/postgres';

export interface CrashPolicyOptions {
  log: (line: string) => void;
  /** Swaps the database pool (the connection the driver bug hit may never flush again). */
  replaceDatabasePool: (reason: string) => void;
  /** Ends the process; `process.exit` outside tests. */
  exit?: (code: number) => void;
}

/**
 * What the processor process does with an error nobody caught. Two postgres.js 3.4.9 defects
 * fire when a backend dies (pg_terminate_backend, a PostgreSQL restart) and are survivable:
 * - a `TypeError` thrown from a setImmediate writing to the null socket (porsager/postgres#1154):
 *   swap the pool and keep serving;
 * - the rejection of the array-type query every new connection runs first, whose promise the
 *   driver discards (porsager/postgres#1192): nothing waited on it, log it and keep serving.
 * Anything else is a bug in this program: log it with its stack and exit 1 (every money
 * movement is one transaction; a client retries with its Idempotency-Key).
 *
 * @example
 * installCrashPolicy({ log, replaceDatabasePool: (reason) => running?.replaceDatabasePool(reason) });
 */
export function installCrashPolicy(options: CrashPolicyOptions): void {
  const { log } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  process.on('uncaughtException', (error) => {
    if (isPostgresNullSocketWrite(error)) {
      log('db: postgres.js null-socket write after a dropped connection; replacing the pool');
      options.replaceDatabasePool('postgres.js null-socket write');
      return;
    }
    log(`crashed: ${error.stack ?? String(error)}`);
    exit(1);
  });
  // Without this listener Node turns an unhandled rejection into an uncaught exception, and
  // the discarded type query of a connection killed while opening crashed the processor.
  process.on('unhandledRejection', (reason) => {
    if (isDiscardedDriverConnectionError(reason)) {
      log(`db: a new connection failed before any query used it (ignored): ${String(reason)}`);
      return;
    }
    log(`crashed: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
    exit(1);
  });
}
