// The server's notices (WARNING, NOTICE) of every pool `openPostgresPool` opens in this
// process, for whoever must hear them. Why: a COMMIT that stops waiting for its synchronous
// standby reports success with only a WARNING ("canceling wait for synchronous replication"),
// and the idempotency engine must answer such a request "outcome unknown", not 201 (wired in
// @once/api with `createCommitNoticeWatch`). Pools are opened deep inside @once/db; a
// process-wide subscription reaches them without threading a callback through every caller.

/** What postgres.js hands `onnotice`: the server's fields by name. */
export type PoolNotice = { severity?: string; code?: string; message?: string; detail?: string };

const subscribers = new Set<(notice: PoolNotice) => void>();

/**
 * Hears every notice of every pool opened by `openPostgresPool`; returns the unsubscribe.
 *
 * @example
 * const watch = createCommitNoticeWatch();
 * subscribePoolNotices(watch.onnotice);
 */
export function subscribePoolNotices(onNotice: (notice: PoolNotice) => void): () => void {
  subscribers.add(onNotice);
  return () => subscribers.delete(onNotice);
}

/** The pools' `onnotice`. */
export function publishPoolNotice(notice: PoolNotice): void {
  for (const onNotice of subscribers) onNotice(notice);
}
