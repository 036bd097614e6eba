/** What the checkout is about to charge: the part of the intent that must not change under one key. */
export interface CheckoutIntentInput {
  tenantId: string;
  lines: readonly { productId: string; quantity: number }[];
  paymentMethod: string;
}

/**
 * A stable hash of a checkout intent, lines merged per product and sorted as the server prices
 * them. Synchronous: `crypto.subtle` needs a secure context, and the demo may be plain http.
 */
export function cartHash(intent: CheckoutIntentInput): string {
  const merged = new Map<string, number>();
  for (const line of intent.lines) {
    merged.set(line.productId, (merged.get(line.productId) ?? 0) + line.quantity);
  }
  const canonical = JSON.stringify({
    t: intent.tenantId,
    l: [...merged.entries()]
      .filter(([, q]) => q !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    m: intent.paymentMethod,
  });
  return cyrb53(canonical).toString(16).padStart(14, '0');
}

/** cyrb53 (public domain): a fast 53-bit string hash with good distribution. Not cryptographic. */
function cyrb53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
