/** Raised when a store call takes longer than `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  constructor(ms: number) {
    super(`Idempotency store did not answer within ${ms} ms`);
    this.name = 'StoreTimeoutError';
  }
}

/**
 * Bound a store call so a hung database turns into a prompt 503 instead of a hung request.
 * The underlying query may still finish later; `onLateSuccess` lets the caller undo it
 * (for example, release a key the late reservation acquired).
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  onLateSuccess?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reject(new StoreTimeoutError(ms));
    }, ms);
    promise.then(
      (value) => {
        if (timedOut) return onLateSuccess?.(value);
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        // After the timeout the caller already has its answer; a late failure changes nothing.
        if (timedOut) return;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
