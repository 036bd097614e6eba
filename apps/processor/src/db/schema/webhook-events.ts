import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

/**
 * The webhook outbox. An event row is inserted in the transaction that changed the
 * object, so an event exists if and only if the change committed; a deliverer sends it
 * until the receiver answers 2xx. `payload` is the exact JSON text that is signed, so
 * every redelivery carries the same bytes and the same `evt_` id.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true })
      .notNull()
      .default(sql`now()`),
    /** Lease: a deliverer owns the row until then, so two processor instances never race. */
    lockedUntil: timestamp('locked_until', { withTimezone: true }),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    /** Times the receiver answered 2xx (more than 1 only under `duplicate_webhook`). */
    deliveries: integer('deliveries').notNull().default(0),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index('webhook_events_pending_idx').on(t.nextAttemptAt).where(sql`${t.deliveredAt} is null`),
    index('webhook_events_account_idx').on(t.accountId, t.createdAt),
  ],
);
