// The app's Drizzle schema: its own table plus the package's exported tables, so
// drizzle-kit generates ONE migration for both.
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';

export { idempotencyKeys, idempotencyRateLimits } from '@once/idempotency/drizzle/schema';

export const payments = pgTable('payments', {
  id: serial('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  amount: integer('amount').notNull(),
});
