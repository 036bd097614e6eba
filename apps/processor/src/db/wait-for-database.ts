import { setTimeout as sleep } from 'node:timers/promises';
import { type BackoffPolicy, exponentialDelayMs } from '@once/backoff';
import { errorCodes, isTransientDatabaseError } from '@once/postgres';

export interface DatabaseWaitOptions {
  log: (line: string) => void;
  /** What is waiting, for the log line. */
  what: string;
  /** Tries in all before the error is final (default 20: about 80 s with the default policy). */
  attempts?: number;
  backoff?: BackoffPolicy;
}

/**
 * Runs `work` again after a transient database error (a restarting PostgreSQL answers 57P03
 * for a while), with capped backoff; a configuration error is thrown at once.
 */
export async function untilDatabaseAnswers<T>(
  work: () => Promise<T>,
  options: DatabaseWaitOptions,
): Promise<T> {
  const attempts = options.attempts ?? 20;
  const backoff = options.backoff ?? { baseMs: 250, maxMs: 5_000 };
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientDatabaseError(error) || attempt >= attempts) throw error;
      const delayMs = exponentialDelayMs(attempt, backoff);
      options.log(
        `processor.start.db_wait ${JSON.stringify({
          what: options.what,
          attempt,
          code: errorCodes(error)[0],
          error: error instanceof Error ? error.message : String(error),
          delayMs,
        })}`,
      );
      await sleep(delayMs);
    }
  }
}
