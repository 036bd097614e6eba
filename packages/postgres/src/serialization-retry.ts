import { setTimeout as sleep } from 'node:timers/promises';
import { errorCodes, isSerializationFailure } from './transient-error.ts';

/**
 * Options of {@link retrySerializationFailures}.
 *
 * @example
 * const options: SerializationRetryOptions = { attempts: 5, onRetry: (n, code) => log('db.retry', { n, code }) };
 */
interface SerializationRetryOptions {
  /** Runs of the transaction in all, the first included. Default 5. */
  attempts?: number;
  /** First pause; doubled each time with full jitter, at most 250 ms. Default 10 ms. */
  baseDelayMs?: number;
  /** Called before each new run (attempt number of the run that failed, its SQLSTATE). */
  onRetry?: (attempt: number, code: string | undefined) => void;
}

/**
 * Runs `transaction` (ONE whole transaction: `db.transaction(...)`, `sql.begin(...)`) again
 * when the server rolled it back for a conflict: a serialization failure (40001, the normal
 * answer of CockroachDB and YugabyteDB under SERIALIZABLE, and of PostgreSQL at SERIALIZABLE)
 * or a deadlock (40P01). Nothing of the failed run was committed, so running it from the
 * start is safe; every other error, including a lost connection (the commit may have
 * happened), is thrown as is. The last run's failure is thrown once `attempts` are spent.
 *
 * @example
 * const result = await retrySerializationFailures(() => db.transaction(async (tx) => pay(tx)));
 */
export async function retrySerializationFailures<T>(
  transaction: () => Promise<T>,
  options: SerializationRetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  const baseDelayMs = options.baseDelayMs ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= attempts || !isSerializationFailure(error)) throw error;
      options.onRetry?.(attempt, errorCodes(error)[0]);
      // Full jitter: two transactions that conflicted must not collide again in lockstep.
      const capMs = Math.min(250, baseDelayMs * 2 ** (attempt - 1));
      await sleep(Math.random() * capMs);
    }
  }
}
