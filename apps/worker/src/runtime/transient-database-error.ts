import { setTimeout as sleep } from 'node:timers/promises';
import { exponentialDelayMs } from '@once/backoff';
import { errorCodes, HUNG_QUERY_CODE, isTransientDatabaseError } from '@once/postgres';
import type { Log } from './logger.ts';

export interface DatabaseRetryOptions {
  log: Log;
  /** What is being retried, for the log line. */
  what: string;
  attempts?: number;
  baseDelayMs?: number;
  /** Checked between attempts so shutdown is not delayed by a database outage. */
  shouldStop?: () => boolean;
  /**
   * Called when an attempt hangs past every server timeout: a postgres.js connection broken by
   * a dropped backend can stop flushing writes (main.ts replaces the pool).
   */
  onHang?: () => void;
}

/**
 * Client-side limit of one attempt. Longer than the server's statement (15 s) and lock
 * timeouts, so it only fires when the server never saw the query.
 */
const HANG_TIMEOUT_MS = 20_000;

/**
 * Runs `work` (one whole transaction) again after transient database errors, with
 * exponential backoff. Every caller's work is safe to repeat: claims and finishes are
 * guarded by lock tokens and settles by status, so a commit whose acknowledgement was
 * lost is a no-op the second time.
 */
export async function withDatabaseRetry<T>(
  work: () => Promise<T>,
  options: DatabaseRetryOptions,
): Promise<T> {
  const attempts = options.attempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await withHangTimeout(work(), HANG_TIMEOUT_MS, options.onHang);
    } catch (error) {
      if (!isTransientDatabaseError(error) || attempt >= attempts || options.shouldStop?.()) {
        throw error;
      }
      const delayMs = exponentialDelayMs(attempt, { baseMs: baseDelayMs, maxMs: 5_000 });
      options.log('db.retry', {
        what: options.what,
        attempt,
        code: errorCodes(error)[0],
        delayMs,
      });
      await sleep(delayMs);
    }
  }
}

async function withHangTimeout<T>(
  work: Promise<T>,
  timeoutMs: number,
  onHang: (() => void) | undefined,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onHang?.();
      reject(
        Object.assign(new Error(`no answer from the database in ${timeoutMs} ms`), {
          code: HUNG_QUERY_CODE,
        }),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([work, hung]);
  } finally {
    clearTimeout(timer);
  }
}
