import { type OutboxJobStatus, outboxJobStatuses } from '../schema/outbox.ts';

/**
 * Where an outbox job may go from each state, and who moves it:
 * - `pending -> running`: a claim (`claimDueJobs`), once `run_after` has come;
 * - `running -> running`: the holder renews its lease, or another worker takes over a lease
 *   that expired (a new `lock_token`: the old holder can no longer write);
 * - `running -> pending`: the holder reschedules it (a retry after backoff);
 * - `running -> done | dead`: the holder finishes it (outcome recorded, or given up: its
 *   payment is `unknown` and the reconciler owns it).
 * `done` and `dead` are terminal. Every move out of `running` is the holder's alone
 * (`isHeldBy`), so a worker whose lease was taken over writes nothing.
 */
export const outboxJobTransitions: Readonly<Record<OutboxJobStatus, readonly OutboxJobStatus[]>> = {
  pending: ['running'],
  running: ['running', 'pending', 'done', 'dead'],
  done: [],
  dead: [],
};

/** Jobs that will still run or are running: a payment with one has its charge under way. */
export const liveJobStatuses: readonly OutboxJobStatus[] = outboxJobStatuses.filter(
  (status) => outboxJobTransitions[status].length > 0,
);

/** Whether a job in `from` may be moved to `to`. */
export function canMoveJob(from: OutboxJobStatus, to: OutboxJobStatus): boolean {
  return outboxJobTransitions[from].includes(to);
}
