import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

/**
 * Armed fault injections. Stored in the database (not memory) so every processor
 * instance sees them and a restart does not silently disarm a chaos test.
 */
export const faults = pgTable(
  'faults',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    kind: text('kind').notNull(),
    /** HTTP method to match (null: any). Webhook faults ignore it. */
    method: text('method'),
    /** Request path prefix (or, for webhook faults, event type prefix) to match; null: any. */
    pathPrefix: text('path_prefix'),
    /** The one API call to match; null: any. */
    operation: text('operation'),
    remaining: integer('remaining').notNull(),
    /** Kept when the fault is cleared (a cleared fault that bit stays, disarmed). */
    taken: integer('taken').notNull().default(0),
    delayMs: integer('delay_ms'),
    /** For `delay`: before_charge | after_charge. */
    delayWhen: text('delay_when'),
    /** For this long after the work committed, the object's reads answer 404 and its webhooks wait. */
    lagMs: integer('lag_ms'),
    /** The fault stops applying then (null: only `remaining` ends it). */
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index('faults_account_idx').on(t.accountId, t.kind)],
);

/**
 * One row per time a fault bit, written by the statement that takes the use (so a use is
 * recorded if and only if `faults.taken` counted it): what the fault hit and when, so an
 * operator can tell which payment an armed switch broke.
 */
export const faultUseRecords = pgTable(
  'fault_uses',
  {
    /** In the order the uses were taken. */
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    faultId: text('fault_id')
      .notNull()
      .references(() => faults.id, { onDelete: 'cascade' }),
    accountId: text('account_id').notNull(),
    kind: text('kind').notNull(),
    /** The database's clock at the take. */
    usedAt: timestamp('used_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
    /** The call it hit (`payment_intents.confirm`), or `webhooks.deliver` for a webhook fault. */
    operation: text('operation').notNull(),
    /** The request's Idempotency-Key (null: none sent, a read, or a webhook delivery). */
    idempotencyKey: text('idempotency_key'),
    /**
     * The object the call acted on: the payment intent (or refund) of the path, the one a
     * create made (set once its work commits; null if it never did), or the delivered event.
     */
    objectId: text('object_id'),
    /**
     * When the fault's effect happened (null: taken, never applied): the refusal answered, the
     * delay slept, the answer of work this request committed withheld (500, reset, late), the
     * 404 answered, the delivery held back or sent twice. A fault that bit a replay or a
     * request refused before its work (nothing charged) was taken, not applied.
     */
    appliedAt: timestamp('applied_at', { withTimezone: true, precision: 6 }),
  },
  (t) => [
    index('fault_uses_fault_idx').on(t.faultId, t.usedAt),
    index('fault_uses_account_idx').on(t.accountId, t.usedAt),
  ],
);
