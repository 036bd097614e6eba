import type { IntentDescription } from '@once/idempotency/client';
import { type CheckoutIntentInput, cartHash } from './cart-hash.ts';

/** A merchant's current intent lives under `<namespace>.<tenantId>`, shared by every tab. */
export const CHECKOUT_INTENT_NAMESPACE = 'once.checkout.intent';

/** A checkout intent read back from shared storage, or `undefined` (then treated as absent). */
export function parseCheckoutIntent(value: unknown): CheckoutIntentInput | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const cart = value as Partial<Record<keyof CheckoutIntentInput, unknown>>;
  if (
    typeof cart.tenantId !== 'string' ||
    typeof cart.paymentMethod !== 'string' ||
    !Array.isArray(cart.lines) ||
    !cart.lines.every(
      (line: unknown) =>
        typeof line === 'object' &&
        line !== null &&
        typeof (line as { productId?: unknown }).productId === 'string' &&
        typeof (line as { quantity?: unknown }).quantity === 'number',
    )
  ) {
    return undefined;
  }
  return {
    tenantId: cart.tenantId,
    paymentMethod: cart.paymentMethod,
    lines: cart.lines as CheckoutIntentInput['lines'],
  };
}

/**
 * An older record (`{ key, cartHash, cart, status, paymentId? }`) in today's shape, so an intent
 * sent and never answered stays locked to its key across that deploy instead of being dropped.
 */
export function upgradeCheckoutRecord(stored: Record<string, unknown>): Record<string, unknown> {
  if ('fingerprint' in stored || !('cartHash' in stored)) return stored;
  const { cartHash: fingerprint, cart: intent, paymentId: resultId, ...rest } = stored;
  return { ...rest, fingerprint, intent, ...(resultId === undefined ? {} : { resultId }) };
}

/** One key per cart (in any order of its lines) and test card. */
export const checkoutIntents: IntentDescription<CheckoutIntentInput> = {
  fingerprint: cartHash,
  parse: parseCheckoutIntent,
};
