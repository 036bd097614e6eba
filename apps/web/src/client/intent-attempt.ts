import type { IdempotencyKeyManager } from './idempotency-key-manager.ts';
import type { PayAttempt } from './pay-outcome.ts';

/**
 * Sends ONE attempt of a checkout intent and keeps the shared intent record honest around
 * it: `unconfirmed` is written BEFORE the request leaves (a lost answer or a tab that dies
 * mid-request leaves the intent locked), and the answer then moves it on (a payment, a
 * definite refusal, or "this attempt did not run", which restores the status before it).
 *
 * @example
 * const attempt = await attemptForIntent(keys, intent.key, () => sendPay({ ..., key: intent.key }));
 */
export async function attemptForIntent<TResult extends { paymentId: string }>(
  keys: IdempotencyKeyManager,
  key: string,
  send: () => Promise<PayAttempt<TResult>>,
): Promise<PayAttempt<TResult>> {
  const before = keys.beginAttempt(key);
  const attempt = await send();
  if (attempt.kind === 'accepted') keys.recordPayment(key, attempt.result.paymentId);
  else keys.recordAnswer(key, attempt.kind, before);
  return attempt;
}
