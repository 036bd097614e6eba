import { sql } from 'drizzle-orm';
import { bigint, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { faults } from './faults.ts';

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
