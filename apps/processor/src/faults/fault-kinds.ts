/**
 * The processor's chaos vocabulary: every fault it can inject, armed over its admin API
 * (`POST /admin/faults`). Exported as `@once/processor/fault-kinds`, so the chaos nemesis, the
 * demo's switches and the cockpit derive their processor faults from this one list. This file
 * imports nothing: importing it loads no part of the processor.
 */

/** Faults that act on an API request, matched by operation (or method and path prefix). */
export const REQUEST_FAULT_KINDS = [
  'fail_before_charge',
  'fail_after_charge',
  'charge_then_drop',
  'delay',
] as const;

/**
 * Faults that refuse an API request as Stripe's limiters do, before its idempotency layer
 * (so the key is not used and a retry with it runs), matched like request faults: 429
 * `rate_limit` (too many requests) and 429 `lock_timeout` (another request holds the
 * object), the second with `Stripe-Should-Retry: true`.
 */
export const LIMIT_FAULT_KINDS = ['rate_limit', 'lock_timeout'] as const;

/** Faults that act on a webhook delivery, matched by event type prefix. */
export const WEBHOOK_FAULT_KINDS = ['duplicate_webhook', 'slow_webhook'] as const;

/** How a recorded use of a webhook fault names what it hit (its object is the event). */
export const WEBHOOK_DELIVERY_OPERATION = 'webhooks.deliver';

/**
 * Faults that act on a read (`GET /v1/...`), matched by path prefix: `not_found` answers
 * 404 `resource_missing` for an object that exists (a misrouted or lagging read). Kept
 * apart from request faults, so a read never uses up a fault meant for a charge.
 */
export const READ_FAULT_KINDS = ['not_found'] as const;

/**
 * Every fault kind. The order is the chaos schedule's draw order (a seeded run draws its
 * faults by index), so a new kind goes at the end.
 */
export const FAULT_KINDS = [
  ...REQUEST_FAULT_KINDS,
  ...WEBHOOK_FAULT_KINDS,
  ...READ_FAULT_KINDS,
  ...LIMIT_FAULT_KINDS,
] as const;

export type RequestFaultKind = (typeof REQUEST_FAULT_KINDS)[number];
export type LimitFaultKind = (typeof LIMIT_FAULT_KINDS)[number];
export type WebhookFaultKind = (typeof WEBHOOK_FAULT_KINDS)[number];
export type FaultKind = (typeof FAULT_KINDS)[number];

export const isRequestFaultKind = (kind: string): kind is RequestFaultKind =>
  (REQUEST_FAULT_KINDS as readonly string[]).includes(kind);
export const isReadFaultKind = (kind: string): kind is (typeof READ_FAULT_KINDS)[number] =>
  (READ_FAULT_KINDS as readonly string[]).includes(kind);
export const isWebhookFaultKind = (kind: string): kind is WebhookFaultKind =>
  (WEBHOOK_FAULT_KINDS as readonly string[]).includes(kind);

/** An armed fault as the admin API shows it. */
export interface FaultView {
  id: string;
  account: string;
  kind: FaultKind;
  method: string | null;
  path_prefix: string | null;
  /** The one API call the fault hits (`payment_intents.confirm`); null: any the rest matches. */
  operation: StripeOperationName | null;
  remaining: number;
  delay_ms: number | null;
  when: 'before_charge' | 'after_charge' | null;
  /** After-charge request faults: the touched object's reads and webhooks lag this long. */
  lag_ms: number | null;
  /** When the fault stops applying (null: when `remaining` is used up). */
  expires: string | null;
  created: string;
}

/**
 * Every Stripe API call the processor serves, one name per route (Stripe's own
 * `resource.action` naming). A request or read fault may name one (`operation`) to hit
 * exactly that call: `payment_intents.confirm` never bites a cancel of the same intent, as
 * the path prefix `/v1/payment_intents/` would.
 */
export const MUTATING_OPERATIONS = [
  'payment_intents.create',
  'payment_intents.confirm',
  'payment_intents.cancel',
  'payment_intents.capture',
  'refunds.create',
] as const;

/** The read-only calls (`GET`), which only read faults (`not_found`) may name. */
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

export const isMutatingOperation = (name: string): name is MutatingOperation =>
  (MUTATING_OPERATIONS as readonly string[]).includes(name);
export const isReadOperation = (name: string): name is ReadOperationName =>
  (READ_OPERATIONS as readonly string[]).includes(name);
