import { isDiscardedDriverConnectionError, isPostgresNullSocketWrite } from './replaceable-pool.ts';

interface DatabaseCrashPolicy {
  /** After the postgres.js null-socket write (see createReplaceableSql). */
  replacePool(reason: string): void;
  /** Any other uncaught exception: a bug in this program. */
  onUncaughtBug(error: Error): void;
  /** `fromDriver`: see isDiscardedDriverConnectionError. Omit to keep Node's default. */
  onUnhandledRejection?(reason: unknown, fromDriver: boolean): void;
}

/**
 * What a long-lived process does with an error nobody caught: the two survivable postgres.js
 * 3.4.9 defects when a backend dies are handled here, everything else goes to `policy`.
 */
export function installDatabaseCrashPolicy(policy: DatabaseCrashPolicy): void {
  process.on('uncaughtException', (error) => {
    if (isPostgresNullSocketWrite(error)) {
      policy.replacePool('postgres.js null-socket write after a dropped connection');
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
