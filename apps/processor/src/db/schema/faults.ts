import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
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
