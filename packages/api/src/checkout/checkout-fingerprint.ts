import { computeFingerprint } from '@once/idempotency';
import type { PayInput } from './pay.types.ts';

/** The fingerprint's operation label: one for every transport, so tRPC and REST agree. */
const CHECKOUT_FINGERPRINT_OPERATION = 'checkout.pay';

/**
 * The fingerprint of one checkout's business input, stored on its payment: hex SHA-256 of the
 * RFC 8785 canonical JSON of the normalised, validated `PayInput`. Normalised means exactly
 * the fields `pay` uses (unknown fields were stripped by the schema), absent optionals as
 * `null`, lines in the order sent. Key order, whitespace and number spelling (`1` / `1.0`) of
 * the request never change it; any difference in product, quantity, line order, email,
 * payment method or capture method does (`automatic` and an absent one are the same).
 */
export function checkoutFingerprint(input: PayInput): string {
  return computeFingerprint(CHECKOUT_FINGERPRINT_OPERATION, normalisePayInput(input));
}

/**
 * Exactly the fields of a validated `PayInput` that `pay` uses, absent optionals as `null`:
 * what a fingerprint of a checkout covers (the REST route fingerprints its key with it too).
 */
export function normalisePayInput(input: PayInput) {
  return {
    lines: input.lines.map((line) => ({ productId: line.productId, quantity: line.quantity })),
    customerEmail: input.customerEmail ?? null,
    paymentMethod: input.paymentMethod ?? null,
    // Only when manual: an automatic checkout keeps the fingerprint it always had, so a
    // retry of a payment made before the option existed still matches it.
    ...(input.capture === 'manual' ? { capture: 'manual' as const } : {}),
  };
}
