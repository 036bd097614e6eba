import { installDatabaseCrashPolicy } from '@once/postgres';

/**
 * The two survivable postgres.js defects are survived (the pool is replaced: the connection
 * the driver bug hit may never flush again); anything else is a bug: log it and exit 1 (every
 * money movement is one transaction; a client retries with its key).
 */
export function installCrashPolicy(options: {
  log: (line: string) => void;
  replaceDatabasePool: (reason: string) => void;
  /** Ends the process; `process.exit` outside tests. */
  exit?: (code: number) => void;
}): void {
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
