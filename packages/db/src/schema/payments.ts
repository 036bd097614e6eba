import { sql } from 'drizzle-orm';
import {
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { failure, isOneOf, tenantId, timestamps } from './columns.ts';

/**
 * Payment states. `processing`: accepted, the outbox job will charge it. `succeeded` /
 * `declined`: the processor's definite answer. `unknown`: a charge may or may not have
 * happened (retries exhausted on ambiguous failures); only the reconciler moves it on.
 * `failed`: the processor provably holds no charge and we stopped trying. A manual-capture
 * payment is `authorized` (the processor holds the funds, `requires_capture`) until an
 * operator's capture makes it `captured` or a void (or the authorisation's expiry) makes it
 * `voided`. Which are terminal, and every allowed move between them, is `@once/payments`'
 * transition table.
 */
export const paymentStatuses = [
  'processing',
  'succeeded',
  'declined',
  'unknown',
  'failed',
  'authorized',
  'captured',
  'voided',
  'requires_action',
  'canceled',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/** `automatic`: confirm charges. `manual`: confirm authorises; an operator captures or voids. */
const captureMethods = ['automatic', 'manual'] as const;

export interface CartLine {
  productId: string;
  name: string;
  quantity: number;
  unitAmount: number;
}

export const payments = pgTable(
  'payments',
  {
    tenantId: tenantId(),
    id: text('id').notNull(),
    status: text('status', { enum: paymentStatuses }).notNull(),
    amount: integer('amount').notNull(),
    currency: text('currency').notNull(),
    /** Lines priced by the server at the time of payment. */
    lines: jsonb('lines').$type<CartLine[]>().notNull(),
    /** The checkout's Idempotency-Key (the user's intent), for operators and the invariant check. */
    idempotencyKey: text('idempotency_key').notNull(),
    /**
     * SHA-256 (hex) of the RFC 8785 canonical JSON of the normalised checkout input that made
     * this payment, the same on every transport: a retry with this key and another cart is
     * refused (`idempotency_key_reused`) even after the key itself expired. Null only on
     * payments written before the column existed.
     */
    requestFingerprint: text('request_fingerprint'),
    /** Sent to the processor as its Idempotency-Key; derived from the payment, never reused. */
    downstreamKey: text('downstream_key').notNull(),
    /** Optional receipt address given at checkout. */
    customerEmail: text('customer_email'),
    /**
     * The principal that placed it (`session:<id>`, `api_key:<hash prefix>`): a shopper's
     * session may read only the payments it placed. Null for payments placed before it existed.
     */
    placedBy: text('placed_by'),
    processorPaymentIntentId: text('processor_payment_intent_id'),
    /**
     * Where the shopper answers the 3-D Secure challenge (the processor's
     * `next_action.redirect_to_url.url`, a hosted page carrying the intent's client secret).
     * Set only while the payment is `requires_action`; cleared when it leaves that state.
     */
    nextActionUrl: text('next_action_url'),
    captureMethod: text('capture_method', { enum: captureMethods }).notNull().default('automatic'),
    /** What the processor captured (`captured` only; a partial capture releases the rest). */
    amountCaptured: integer('amount_captured'),
    /** Stripe decline code or error code when declined/failed. */
    ...failure(),
    /**
     * The reconciler's next look at an undecided payment (null: as soon as it is due).
     * Each undecided check pushes it out with backoff, so payments nobody can decide yet
     * (a refused lookup, an intent still processing) do not take every pass.
     */
    reconcileAfter: timestamp('reconcile_after', { withTimezone: true }),
    /** How many reconciler checks left this payment undecided; many means stuck (see /healthz). */
    reconcileChecks: integer('reconcile_checks').notNull().default(0),
    ...timestamps(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    uniqueIndex('payments_downstream_key_unique').on(t.tenantId, t.downstreamKey),
    // One payment per (tenant, checkout key) forever, across tRPC and REST, whatever the key's TTL.
    uniqueIndex('payments_idempotency_key_unique').on(t.tenantId, t.idempotencyKey),
    index('payments_status_updated_idx')
      .on(t.status, t.updatedAt)
      .where(sql`${t.status} in ('processing', 'unknown')`),
    // The reconciler's look at challenges waiting for the shopper (and abandoned ones).
    index('payments_requires_action_idx')
      .on(t.updatedAt)
      .where(sql`${t.status} = 'requires_action'`),
    check('payments_amount_positive', sql`${t.amount} > 0`),
    check('payments_status_valid', isOneOf(t.status, paymentStatuses)),
    check('payments_capture_method_valid', isOneOf(t.captureMethod, captureMethods)),
  ],
);
