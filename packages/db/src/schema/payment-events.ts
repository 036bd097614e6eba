import { sql } from 'drizzle-orm';
import { bigint, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { tenantId } from './columns.ts';

/**
 * The life of a payment, as durable facts: each row is written in the SAME transaction that
 * made its fact true (the pay transaction, a worker's claim, the recorded intent, the recorded
 * outcome, a webhook's application, a reconciler's decision), so an event exists if and only
 * if its fact does. Never derived from logs. Written only through `recordPaymentEvents`
 * (`@once/db/payment-events`).
 *
 * `seq` orders events across transactions (identity values are taken at insert time);
 * `at` is the database clock (`clock_timestamp()`, so events of one transaction differ).
 * `actor` is the process the fact belongs to: `browser`, `web`, `worker:<id>`, `processor`,
 * `webhook`, `reconciler`. `detail` is small JSON (keys, outcomes), never card data.
 */
export const paymentEvents = pgTable(
  'payment_events',
  {
    tenantId: tenantId(),
    paymentId: text('payment_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).generatedAlwaysAsIdentity().notNull(),
    at: timestamp('at', { withTimezone: true }).notNull().default(sql`clock_timestamp()`),
    actor: text('actor').notNull(),
    kind: text('kind').notNull(),
    detail: jsonb('detail').$type<Record<string, unknown>>().notNull().default({}),
  },
  // Tenant first (shards by tenant); a payment's timeline is one index range in order.
  (t) => [primaryKey({ columns: [t.tenantId, t.paymentId, t.seq] })],
);
