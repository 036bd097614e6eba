import { isSerializationConflict } from './transient-error.ts';

export interface TransactionRetryOptions {
  /** Total attempts, the first included. Default 5. */
  attempts?: number;
  /** First back-off; doubles per attempt, with jitter, so two conflicting retries separate. */
  baseDelayMs?: number;
  /** Called before each retry (logs, metrics). */
  onRetry?: (info: { attempt: number; code: string | undefined }) => void;
}

/**
 * Runs `transaction` (ONE whole transaction, e.g. `() => db.transaction(fn)`) again when
 * PostgreSQL aborted it to resolve a conflict: 40001 serialization_failure (SERIALIZABLE or
 * REPEATABLE READ) or 40P01 deadlock_detected. The server rolled the attempt back, so running
 * it again is always safe; any other error is thrown at once.
 *
 * @example
 * const total = await withTransactionRetry(() =>
 *   db.transaction((tx) => moveMoney(tx), { isolationLevel: 'serializable' }),
 * );
 */
export async function withTransactionRetry<T>(
  transaction: () => Promise<T>,
  options: TransactionRetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  const baseDelayMs = options.baseDelayMs ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (!isSerializationConflict(error) || attempt >= attempts) throw error;
      options.onRetry?.({ attempt, code: (error as { code?: string }).code });
      const delayMs = baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random());
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
