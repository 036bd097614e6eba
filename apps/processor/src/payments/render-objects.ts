import type { charges, PaymentIntentRow, refunds } from '../db/schema/index.ts';

const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * A PaymentIntent row as Stripe's JSON (the fields the SDK and our apps read; the rest
 * are present with Stripe's neutral values so typed clients see a complete object).
 */
export function renderPaymentIntent(row: PaymentIntentRow): Record<string, unknown> {
  return {
    id: row.id,
    object: 'payment_intent',
    amount: row.amount,
    amount_capturable: row.amountCapturable,
    amount_received: row.amountReceived,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: null,
    canceled_at: row.canceledAt ? unixSeconds(row.canceledAt) : null,
    cancellation_reason: row.cancellationReason,
    capture_method: row.captureMethod,
    client_secret: row.clientSecret,
    confirmation_method: 'automatic',
    created: unixSeconds(row.createdAt),
    currency: row.currency,
    customer: row.customer,
    description: row.description,
    last_payment_error: row.lastPaymentError ?? null,
    latest_charge: row.latestCharge,
    livemode: false,
    metadata: row.metadata,
    next_action: row.status === 'requires_action' ? (row.nextAction ?? null) : null,
    on_behalf_of: null,
    payment_method: row.paymentMethod,
    payment_method_types: ['card'],
    processing: null,
    receipt_email: null,
    setup_future_usage: null,
    shipping: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: row.status,
    transfer_data: null,
    transfer_group: null,
  };
}

/** A Charge row as Stripe's JSON (sent in `charge.refunded` events). */
export function renderCharge(row: typeof charges.$inferSelect): Record<string, unknown> {
  const succeeded = row.status === 'succeeded';
  return {
    id: row.id,
    object: 'charge',
    amount: row.amount,
    amount_captured: row.amountCaptured,
    amount_refunded: row.amountRefunded,
    captured: succeeded && row.captured,
    created: unixSeconds(row.createdAt),
    currency: row.currency,
    failure_code: row.failureCode,
    failure_message: row.failureMessage,
    livemode: false,
    metadata: row.metadata,
    outcome: succeeded
      ? { network_status: 'approved_by_network', reason: null, type: 'authorized' }
      : { network_status: 'declined_by_network', reason: row.declineCode, type: 'issuer_declined' },
    paid: succeeded,
    payment_intent: row.paymentIntentId,
    payment_method: row.paymentMethod,
    refunded: succeeded && row.amountRefunded >= row.amount,
    status: row.status,
  };
}

/** A Refund row as Stripe's JSON. */
export function renderRefund(row: typeof refunds.$inferSelect): Record<string, unknown> {
  return {
    id: row.id,
    object: 'refund',
    amount: row.amount,
    balance_transaction: null,
    charge: row.chargeId,
    created: unixSeconds(row.createdAt),
    currency: row.currency,
    metadata: row.metadata,
    payment_intent: row.paymentIntentId,
    reason: row.reason,
    receipt_number: null,
    source_transfer_reversal: null,
    status: row.status,
    transfer_reversal: null,
    ...(row.failureReason ? { failure_reason: row.failureReason } : {}),
  };
}
