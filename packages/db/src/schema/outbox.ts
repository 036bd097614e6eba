import { sql } from 'drizzle-orm';
import {
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { isOneOf, tenantId, timestamps } from './columns.ts';

/**
 * `pending`: waiting for `run_after`. `running`: claimed by a worker until `locked_until`
 * (an expired lease is claimable again). `done`: outcome recorded. `dead`: attempts
 * exhausted; its payment is `unknown` and the reconciler owns it. The moves between them and
 * who may make them: `@once/db/outbox`.
 */
export const outboxJobStatuses = ['pending', 'running', 'done', 'dead'] as const;
export type OutboxJobStatus = (typeof outboxJobStatuses)[number];

/**
 * What a job does; each kind's payload is `OutboxJobPayloads` (`@once/db/outbox`). The column
 * has no CHECK on kinds, so a new kind needs no migration, and a worker claims only the kinds
 * it has a handler for.
 */
export const outboxJobKinds = [
  'charge_payment',
  'capture_payment',
  'void_payment',
  'refund_payment',
] as const;
export type OutboxJobKind = (typeof outboxJobKinds)[number];

/** Channel the dispatcher LISTENs on; inserting a job NOTIFYs it in the same transaction. */
export const OUTBOX_NOTIFY_CHANNEL = 'once_outbox';

export const outboxJobs = pgTable(
  'outbox_jobs',
  {
    tenantId: tenantId(),
    id: text('id').notNull(),
    kind: text('kind', { enum: outboxJobKinds }).notNull(),
    /** The payment the job acts on. */
    paymentId: text('payment_id').notNull(),
    /** The downstream Idempotency-Key every attempt of this job sends. */
    downstreamKey: text('downstream_key').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status', { enum: outboxJobStatuses }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull().default(8),
    runAfter: timestamp('run_after', { withTimezone: true }).notNull().default(sql`now()`),
    lockedBy: text('locked_by'),
    /** Owner token of the current claim; a worker whose lease was taken over cannot finish. */
    lockToken: text('lock_token'),
    lockedUntil: timestamp('locked_until', { withTimezone: true }),
    lastError: text('last_error'),
    ...timestamps(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    index('outbox_jobs_claimable_idx').on(t.runAfter).where(sql`${t.status} = 'pending'`),
    index('outbox_jobs_running_lease_idx').on(t.lockedUntil).where(sql`${t.status} = 'running'`),
    index('outbox_jobs_payment_idx').on(t.tenantId, t.paymentId),
    check('outbox_jobs_status_valid', isOneOf(t.status, outboxJobStatuses)),
    check('outbox_jobs_attempts_nonnegative', sql`${t.attempts} >= 0`),
  ],
);
