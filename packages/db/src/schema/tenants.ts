import { sql } from 'drizzle-orm';
import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * A merchant using the checkout. Every other table is keyed by tenant first, and no
 * transaction spans tenants, so a tenant-sharded Postgres carries the schema unchanged.
 */
export const tenants = pgTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** SHA-256 (hex) of the tenant's REST API key; the key itself is never stored. */
  apiKeySha256: text('api_key_sha256').notNull().unique(),
  /** The tenant's secret key at the payment processor (test mode only in this project). */
  processorSecretKey: text('processor_secret_key').notNull(),
  /** The tenant's account id at the processor (`acct_...`): webhooks name it in `account`. */
  processorAccountId: text('processor_account_id').unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().default(sql`now()`),
});
