import { installDatabaseCrashPolicy } from '@once/postgres';

export interface CrashPolicyOptions {
  log: (line: string) => void;
  /** Swaps the database pool (the connection the driver bug hit may never flush again). */
  replaceDatabasePool: (reason: string) => void;
  /** Ends the process; `process.exit` outside tests. */
  exit?: (code: number) => void;
}

/**
 * The processor's answers to `@once/postgres`'s crash policy: the two survivable
 * postgres.js 3.4.9 defects are logged and survived (the pool is swapped after the
 * null-socket write); anything else, an uncaught exception or an unhandled rejection of its
 * own, is a bug in this program: log it with its stack and exit 1 (every money movement is
 * one transaction; a client retries with its Idempotency-Key).
 */
export function installCrashPolicy(options: CrashPolicyOptions): void {
  const { log } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  installDatabaseCrashPolicy({
    replacePool() {
      log('db: postgres.js null-socket write after a dropped connection; replacing the pool');
      options.replaceDatabasePool('postgres.js null-socket write');
    },
    onUncaughtBug(error) {
      log(`crashed: ${error.stack ?? String(error)}`);
      exit(1);
    },
    // Without this listener Node turns an unhandled rejection into an uncaught exception, and
    // the discarded type query of a connection killed while opening crashed the processor.
    onUnhandledRejection(reason, fromDriver) {
      if (fromDriver) {
        log(`db: a new connection failed before any query used it (ignored): ${String(reason)}`);
        return;
      }
      log(
        `crashed: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`,
      );
      exit(1);
    },
  });
}
