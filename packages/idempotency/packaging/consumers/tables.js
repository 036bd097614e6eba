// The package's own DDL (equal to drizzle-kit's output for its tables) plus the app's table.
import { idempotencySchemaSql } from '@once/idempotency/drizzle';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';

export const payments = pgTable('payments', {
  id: serial('id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  amount: integer('amount').notNull(),
});

export async function createTables(client) {
  await client.unsafe(idempotencySchemaSql);
  await client.unsafe(
    'create table payments (id serial primary key, tenant_id text not null, amount integer not null)',
  );
}
