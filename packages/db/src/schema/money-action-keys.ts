import { check, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { createdAt, isOneOf, tenantId } from './columns.ts';

const moneyActionKinds = ['capture', 'void', 'refund'] as const;
export type MoneyActionKind = (typeof moneyActionKinds)[number];

/**
 * Which money action each of a tenant's Idempotency-Keys made, for ever: one operation per
 * (tenant, key) whatever the transport (REST, GraphQL, the cockpit's tRPC), as Stripe refuses a
 * key reused on another endpoint. The key store's own rows are scoped by operation and expire;
 * this row is written in the action's transaction, so two requests that meet here (at once,
 * on two transports, two operations or two payments) are decided one after the other by its
 * primary key.
 */
export const moneyActionKeys = pgTable(
  'money_action_keys',
  {
    tenantId: tenantId(),
    /** The caller's Idempotency-Key as it sent it. */
    key: text('key').notNull(),
    kind: text('kind', { enum: moneyActionKinds }).notNull(),
    paymentId: text('payment_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.key] }),
    check('money_action_keys_kind_valid', isOneOf(t.kind, moneyActionKinds)),
  ],
);
