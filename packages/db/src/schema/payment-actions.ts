import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { failure, isOneOf, tenantId, timestamps } from './columns.ts';

/** What an operator asked of an authorised payment. */
const paymentActionKinds = ['capture', 'void'] as const;
export type PaymentActionKind = (typeof paymentActionKinds)[number];

/**
 * `pending`: written with its outbox job, the worker has not recorded the processor's answer.
 * `succeeded` / `failed`: the processor's definite answer (a refusal is `failed`, with its
 * code). `unknown`: retries exhausted on ambiguous answers; the payment stays `authorized`.
 */
const paymentActionStatuses = ['pending', 'succeeded', 'failed', 'unknown'] as const;
export type PaymentActionStatus = (typeof paymentActionStatuses)[number];

/**
 * An operator's capture or void of a manual-capture payment: written (with its outbox job)
 * before the worker calls the processor with the action's own downstream key. At most one
 * capture or void per payment that has not failed, so a second operator's click (another key)
 * cannot capture twice.
 */
export const paymentActions = pgTable(
  'payment_actions',
  {
    tenantId: tenantId(),
    id: text('id').notNull(),
    paymentId: text('payment_id').notNull(),
    kind: text('kind', { enum: paymentActionKinds }).notNull(),
    status: text('status', { enum: paymentActionStatuses }).notNull().default('pending'),
    /** A capture's `amount_to_capture` (null: the whole authorisation). */
    amount: integer('amount'),
    /** Sent to the processor as its Idempotency-Key; derived from the operator's key. */
    downstreamKey: text('downstream_key').notNull(),
    /** The operator's principal. */
    requestedBy: text('requested_by').notNull(),
    ...failure(),
    ...timestamps(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    uniqueIndex('payment_actions_downstream_key_unique').on(t.tenantId, t.downstreamKey),
    uniqueIndex('payment_actions_one_live_per_payment')
      .on(t.tenantId, t.paymentId)
      .where(sql`${t.status} <> 'failed'`),
    index('payment_actions_payment_idx').on(t.tenantId, t.paymentId),
    check('payment_actions_kind_valid', isOneOf(t.kind, paymentActionKinds)),
    check('payment_actions_status_valid', isOneOf(t.status, paymentActionStatuses)),
    check('payment_actions_amount_positive', sql`${t.amount} is null or ${t.amount} > 0`),
  ],
);
