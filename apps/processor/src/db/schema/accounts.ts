import { sql } from 'drizzle-orm';
import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** A merchant account at the processor; requests authenticate with its secret key. */
export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  /** Test-mode secret key (`sk_test_...`). Plain text: this is a mock holding no real money. */
  secretKey: text('secret_key').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().default(sql`now()`),
});
