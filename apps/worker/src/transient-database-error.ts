import { setTimeout as sleep } from 'node:timers/promises';
import type { Log } from './logger.ts';

/** Our own code for a transaction that neither finished nor failed in time (see below). */
export const HUNG_QUERY_CODE = 'ONCE_CLIENT_TIMEOUT';

let onHungQuery: (() => void) | undefined;

/**
 * Registers what to do when a transaction hangs client-side past every server timeout
 * (main.ts replaces the pool: a postgres.js connection broken by a dropped backend can
 * stop flushing writes, and its queries would otherwise wait forever).
 */
export function whenDatabaseHangs(callback: () => void): void {
  onHungQuery = callback;
}

// SQLSTATEs after which the same transaction can simply run again: the server went away
// (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now), a conflict the
// server resolved by aborting us (40001 serialization, 40P01 deadlock, 55P03 lock timeout),
// a cancelled statement (57014: statement_timeout while the server was struggling).
const TRANSIENT_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '40001',
  '40P01',
  '55P03',
  '57014',
]);
// postgres.js and Node socket errors that mean "the connection broke", not "the query is wrong".
const TRANSIENT_CLIENT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  // Only ever seen here when the pool was replaced under a query (replaceable-pool.ts).
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  HUNG_QUERY_CODE,
]);

/**
 * True when a database error is worth retrying: the connection or the server failed, or
 * the server aborted us to resolve a conflict. Syntax errors and constraint violations
 * are not.
 *
 * @example
 * isTransientDatabaseError({ code: '57P01' }); // true: pg_terminate_backend or a restart
 */
export function isTransientDatabaseError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  // Class 08: connection exceptions.
  return TRANSIENT_SQLSTATES.has(code) || TRANSIENT_CLIENT_CODES.has(code) || /^08...$/.test(code);
}

export interface DatabaseRetryOptions {
  log: Log;
  /** What is being retried, for the log line. */
  what: string;
  attempts?: number;
  baseDelayMs?: number;
  /** Checked between attempts so shutdown is not delayed by a database outage. */
  shouldStop?: () => boolean;
  /**
   * Client-side limit of one attempt. Longer than the server's statement (15 s) and lock
   * timeouts, so it only fires when the server never saw the query. Default 20 s.
   */
  hangTimeoutMs?: number;
}

/**
 * Runs `work` (one whole transaction) again after transient database errors, with
 * exponential backoff. Every caller's work is safe to repeat: claims and finishes are
 * guarded by lock tokens and settles by status, so a commit whose acknowledgement was
 * lost is a no-op the second time.
 *
 * @example
 * await withDatabaseRetry(() => sql.begin((tx) => finishJob(tx, job)), { log, what: 'finish' });
 */
export async function withDatabaseRetry<T>(
  work: () => Promise<T>,
  options: DatabaseRetryOptions,
): Promise<T> {
  const attempts = options.attempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await withHangTimeout(work(), options.hangTimeoutMs ?? 20_000);
    } catch (error) {
      if (!isTransientDatabaseError(error) || attempt >= attempts || options.shouldStop?.()) {
        throw error;
      }
      const delayMs = Math.min(5_000, baseDelayMs * 2 ** (attempt - 1));
      options.log('db.retry', {
        what: options.what,
        attempt,
        code: (error as { code?: string }).code,
        delayMs,
      });
      await sleep(delayMs);
    }
  }
}

async function withHangTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onHungQuery?.();
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
