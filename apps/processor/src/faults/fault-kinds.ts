// Every fault the processor can inject (`POST /admin/faults`). This file imports nothing.

/** Faults that act on an API request, matched by operation (or method and path prefix). */
export const REQUEST_FAULT_KINDS = [
  'fail_before_charge',
  'fail_after_charge',
  'charge_then_drop',
  'delay',
] as const;

/** Faults that refuse an API request with a 429 as Stripe's limiters do, before its idempotency layer. */
export const LIMIT_FAULT_KINDS = ['rate_limit', 'lock_timeout'] as const;

/** Faults that act on a webhook delivery, matched by event type prefix. */
const WEBHOOK_FAULT_KINDS = ['duplicate_webhook', 'slow_webhook'] as const;

export const WEBHOOK_DELIVERY_OPERATION = 'webhooks.deliver';

/** Faults on a read (404 for an object that exists), apart so a read never uses up a charge's fault. */
export const READ_FAULT_KINDS = ['not_found'] as const;

/** A seeded chaos run draws faults by index in this order, so a new kind goes at the end. */
export const FAULT_KINDS = [
  ...REQUEST_FAULT_KINDS,
  ...WEBHOOK_FAULT_KINDS,
  ...READ_FAULT_KINDS,
  ...LIMIT_FAULT_KINDS,
] as const;

export type WebhookFaultKind = (typeof WEBHOOK_FAULT_KINDS)[number];
export type FaultKind = (typeof FAULT_KINDS)[number];

const isOf =
  <K extends string>(kinds: readonly K[]) =>
  (kind: string): kind is K =>
    (kinds as readonly string[]).includes(kind);
export const isRequestFaultKind = isOf(REQUEST_FAULT_KINDS);
export const isReadFaultKind = isOf(READ_FAULT_KINDS);
export const isWebhookFaultKind = isOf(WEBHOOK_FAULT_KINDS);

/**
 * One name per route: a fault naming `payment_intents.confirm` never bites a cancel of the
 * same intent, as the path prefix `/v1/payment_intents/` would.
 */
export const MUTATING_OPERATIONS = [
  'payment_intents.create',
  'payment_intents.confirm',
  'payment_intents.cancel',
  'payment_intents.capture',
  'refunds.create',
] as const;

export const READ_OPERATIONS = [
  'payment_intents.list',
  'payment_intents.search',
  'payment_intents.retrieve',
  'refunds.retrieve',
  'refunds.list',
  'events.list',
  'events.retrieve',
] as const;

export type MutatingOperation = (typeof MUTATING_OPERATIONS)[number];
export type ReadOperationName = (typeof READ_OPERATIONS)[number];
export type StripeOperationName = MutatingOperation | ReadOperationName;
