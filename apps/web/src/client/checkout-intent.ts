import type { IntentDescription } from '@once/idempotency/client';
import { type CheckoutIntentInput, cartHash } from './cart-hash.ts';

/**
 * The storage namespace of the checkout's intents: a merchant's current intent lives in
 * `localStorage` under `once.checkout.intent.<tenantId>`, shared by every tab of the origin.
 */
export const CHECKOUT_INTENT_NAMESPACE = 'once.checkout.intent';

/**
 * A checkout intent read back from shared storage, or `undefined` if it is not one (another
 * version of the page, a hand-edited record): the key manager then treats it as absent.
 *
 * @example
 * parseCheckoutIntent({ tenantId: 'tenant_a', lines: [], paymentMethod: 'pm_card_visa' }); // the intent
 */
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
 * A record the checkout stored before the key manager moved into `@once/idempotency`
 * (`{ key, cartHash, cart, status, paymentId? }`), in today's shape: an intent that was sent
 * and never answered stays locked to its key across that deploy instead of being dropped.
 *
 * @example
 * upgradeCheckoutRecord({ key: 'k', cartHash: 'h', cart, status: 'unconfirmed' }); // { key: 'k', fingerprint: 'h', intent: cart, ... }
 */
export function upgradeCheckoutRecord(stored: Record<string, unknown>): Record<string, unknown> {
  if ('fingerprint' in stored || !('cartHash' in stored)) return stored;
  const { cartHash: fingerprint, cart: intent, paymentId: resultId, ...rest } = stored;
  return { ...rest, fingerprint, intent, ...(resultId === undefined ? {} : { resultId }) };
}

/**
 * What the package's key manager must know about a checkout intent: one key per cart (lines
 * merged and sorted, so the same cart in another order keeps its key) and test card.
 *
 * @example
 * new IdempotencyKeyManager({ storage: localStorage, scope: tenantId, intents: checkoutIntents, namespace: CHECKOUT_INTENT_NAMESPACE });
 */
export const checkoutIntents: IntentDescription<CheckoutIntentInput> = {
  fingerprint: cartHash,
  parse: parseCheckoutIntent,
};
