import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { failure, isOneOf, tenantId, timestamps } from './columns.ts';

/**
 * `requested`: written with its outbox job; the processor has not answered yet. `pending` /
 * `succeeded` / `failed`: the processor's refund status (a refusal is `failed`, with its
 * code). `unknown`: retries exhausted on ambiguous answers. Every refund but a `failed` one
 * counts against what may still be refunded.
 */
const refundStatuses = ['requested', 'pending', 'succeeded', 'failed', 'unknown'] as const;
export type RefundStatus = (typeof refundStatuses)[number];

/**
 * An operator's refund of a succeeded or captured payment, written (with its outbox job)
 * before the worker calls the processor with the refund's own downstream key. A payment may
 * have several; the request refuses one over what is left.
 */
export const refunds = pgTable(
  'refunds',
  {
    tenantId: tenantId(),
    id: text('id').notNull(),
    paymentId: text('payment_id').notNull(),
    amount: integer('amount').notNull(),
    /** Stripe's `reason`: `duplicate`, `fraudulent` or `requested_by_customer`. */
    reason: text('reason'),
    status: text('status', { enum: refundStatuses }).notNull().default('requested'),
    /** The processor's `re_...`, once it answered. */
    processorRefundId: text('processor_refund_id'),
    /**
     * Sent to the processor as its Idempotency-Key, derived from the operator's key;
     * `imported:re_...` for a refund taken from the processor's list (nothing sends it).
     */
    downstreamKey: text('downstream_key').notNull(),
    /** The operator's principal. */
    requestedBy: text('requested_by').notNull(),
    ...failure(),
    ...timestamps(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    uniqueIndex('refunds_downstream_key_unique').on(t.tenantId, t.downstreamKey),
    index('refunds_payment_idx').on(t.tenantId, t.paymentId),
    check('refunds_amount_positive', sql`${t.amount} > 0`),
    check('refunds_status_valid', isOneOf(t.status, refundStatuses)),
    check(
      'refunds_reason_valid',
      sql`${t.reason} is null or ${t.reason} in ('duplicate', 'fraudulent', 'requested_by_customer')`,
    ),
  ],
);
