import type { AttemptOutcome } from './attempt-outcome.ts';
import type { IdempotencyKeyManager } from './idempotency-key-manager.ts';

/**
 * Sends ONE attempt of an intent and keeps the shared intent record honest around it:
 * `unconfirmed` is written BEFORE the request leaves (a lost answer or a tab that dies
 * mid-request leaves the intent locked), and the answer then moves it on (accepted, a
 * definite refusal, or "this attempt did not run", which restores the status before it).
 * `resultId` names the accepted result (a payment id, an order id) so any tab or a reload
 * can follow it.
 */
export async function attemptForIntent<TIntent, TResult>(
  keys: IdempotencyKeyManager<TIntent>,
  key: string,
  send: () => Promise<AttemptOutcome<TResult>>,
  resultId: (result: TResult) => string,
): Promise<AttemptOutcome<TResult>> {
  const before = keys.beginAttempt(key);
  const attempt = await send();
  if (attempt.kind === 'accepted') keys.recordAccepted(key, resultId(attempt.result));
  else keys.recordAnswer(key, attempt.kind, before);
  return attempt;
}
