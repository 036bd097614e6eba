// The outbox job state machine: its states and moves, the SQL predicates every outbox
// statement composes, the claim, the holder's guarded writes and the one enqueue (+ NOTIFY),
// each runnable on postgres.js (the worker) and drizzle (the web app, the API).
export { type ClaimOptions, claimDueJobs, msUntilNextClaimable } from './claim.ts';
export type { ClaimedJob } from './claimed-job.ts';
export { enqueueOutboxJob, moneyMoveJob } from './enqueue.ts';
export { finishJob, lockHeldJob, renewLease, rescheduleJob } from './held-job.ts';
export type { ChargePaymentPayload, OutboxJobPayloads } from './job-kinds.ts';
export { isClaimable, isHeldBy, isLiveJob, type JobHolder } from './job-sql.ts';
