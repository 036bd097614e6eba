/**
 * What proves a holder of a checkout's Idempotency-Key to `checkout.status`: the key's SHA-256
 * (UTF-8, lower-case hex). Whoever holds the key may follow its payment, whatever session it
 * now has (a renewed cookie, another tab's sign-in); the proof travels instead of the key, so
 * the key never sits in a query's URL (logs, proxies). Web Crypto only: the browser computes
 * the same value with this function.
 */
export async function checkoutKeyProof(key: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
