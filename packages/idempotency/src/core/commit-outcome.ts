/**
 * What a COMMIT that did not answer cleanly leaves behind: not a failure (the server may have
 * committed) and not a success (a failover may still lose it). Both are answered as
 * `idempotency_outcome_unknown`, never as the handler's 2xx, with the key kept where a retry
 * re-checks it.
 */

import { causeChain } from './cause-chain.ts';
import { IdempotencyError } from './errors.ts';

/** A retry can ask again at once: it replays what committed, or runs what did not. */
const COMMIT_UNKNOWN_RETRY_AFTER_SECONDS = 1;

/**
 * The refusal for a request whose completing COMMIT ended ambiguously: 409
 * `idempotency_outcome_unknown`, the retry re-checks the key.
 */
export function commitOutcomeUnknown(why: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError('idempotency_outcome_unknown', {
    retryAfterSeconds: COMMIT_UNKNOWN_RETRY_AFTER_SECONDS,
    message: `The outcome of this request is unknown (${why}); retry with the same Idempotency-Key`,
    cause,
  });
}

/**
 * One request's watch on the COMMIT that completes its key, started before the handler runs:
 * `assertReplicated` afterwards throws `commitOutcomeUnknown` when any COMMIT lost its
 * synchronous standby meanwhile (`createCommitNoticeWatch`): committed here, maybe not on the
 * standby a failover would promote, so the retry replays it.
 */
export function watchCommits(unreplicatedCommits: () => number) {
  const before = unreplicatedCommits();
  return {
    assertReplicated(): void {
      if (unreplicatedCommits() !== before)
        throw commitOutcomeUnknown('a COMMIT stopped waiting for its synchronous standby');
    },
  };
}

// Codes of a connection that broke (postgres.js, Node sockets) or a server that ended it
// (class 08, 57P01-57P03): if that happened during COMMIT, the commit may have happened.
const LOST_CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57P03',
]);

/**
 * True when `error` (or a `cause` it wraps, as drizzle does) says the connection was lost
 * rather than that the server refused the statement: a transaction that ends this way after
 * writing its key may or may not have committed.
 */
export function isLostConnection(error: unknown): boolean {
  return causeChain(error).some(
    ({ code, message }) =>
      (typeof code === 'string' && (LOST_CONNECTION_CODES.has(code) || /^08...$/.test(code))) ||
      // node-postgres names no code for a socket closed under a query.
      (typeof message === 'string' && message.includes('Connection terminated unexpectedly')),
  );
}

/**
 * True for PostgreSQL's WARNING when a COMMIT stops waiting for its synchronous standby (a
 * cancel, a statement timeout, a terminated backend): "canceling [the] wait for synchronous
 * replication ...", detail "The transaction has already committed locally, but might not have
 * been replicated to the standby." The COMMIT then reports success.
 */
function isUnreplicatedCommitNotice(notice: { message?: string; detail?: string }): boolean {
  return (
    /wait for synchronous replication/.test(notice.message ?? '') ||
    /already committed locally/.test(notice.detail ?? '')
  );
}

/**
 * Counts the unreplicated-commit warnings a database client reports. Give `onnotice` to the
 * driver (postgres.js: `postgres(url, { onnotice })`) and `unreplicatedCommits` to
 * `createIdempotency`: a request whose completing transaction ran while the count moved is
 * answered `idempotency_outcome_unknown`. A notice names no transaction, so every request
 * completing in that window is answered so; their retries replay what did commit.
 *
 * @example
 * const watch = createCommitNoticeWatch();
 * const client = postgres(url, { onnotice: watch.onnotice });
 * const idempotency = createIdempotency({ store, unreplicatedCommits: watch.unreplicatedCommits });
 */
export function createCommitNoticeWatch() {
  let count = 0;
  return {
    onnotice(notice: { message?: string; detail?: string }): void {
      if (isUnreplicatedCommitNotice(notice)) count++;
    },
    unreplicatedCommits: (): number => count,
  };
}
