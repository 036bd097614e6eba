/**
 * How a guarded request with a key was answered, as an adapter's `onAnswered` hook hears it:
 * `executed` (this request ran the handler) or `replayed` (the stored answer of an earlier
 * request, the handler did not run). Refusals, and failures that release the key, are not told:
 * they reach the caller as errors.
 *
 * @example
 * onAnswered: (answer) => { if (answer.outcome === 'replayed') metrics.replays.inc(); }
 */
export interface IdempotencyAnswer {
  outcome: 'executed' | 'replayed';
  tenantId: string;
  operation: string;
  /** The request's key, as the guard parsed it. */
  key: string;
  fingerprint: string;
}

/**
 * Calls an adapter's `onAnswered` once the answer is decided (stored or replayed), awaiting it
 * before the answer is sent. Whatever it throws or rejects with is logged and dropped: a hook
 * can never turn an answered request into an error, nor change what the key holds.
 */
export async function tellAnswered<TArgs extends unknown[]>(
  hook: ((...args: TArgs) => unknown) | undefined,
  ...args: TArgs
): Promise<void> {
  if (!hook) return;
  try {
    await hook(...args);
  } catch (error) {
    console.error('@once/idempotency: onAnswered threw; the answer stands:', error);
  }
}
