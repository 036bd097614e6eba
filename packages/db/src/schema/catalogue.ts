import { sql } from 'drizzle-orm';
import { check, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { tenantId } from './columns.ts';

/** What a tenant sells. Prices come from here, never from the client. */
export const products = pgTable(
  'products',
  {
    tenantId: tenantId(),
    id: text('id').notNull(),
    name: text('name').notNull(),
    /** Minor units (cents). */
    unitAmount: integer('unit_amount').notNull(),
    currency: text('currency').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    check('products_unit_amount_positive', sql`${t.unitAmount} > 0`),
    check('products_currency_lowercase', sql`${t.currency} ~ '^[a-z]{3}$'`),
  ],
);
