import { type IdempotencyError, isIdempotencyError } from '../core/errors.ts';

/** The `IdempotencyError` a promise rejects with; fails the test if it resolves or rejects otherwise. */
export async function refusal(promise: Promise<unknown>): Promise<IdempotencyError> {
  try {
    await promise;
  } catch (error) {
    if (isIdempotencyError(error)) return error;
    throw error;
  }
  throw new Error('expected an IdempotencyError');
}
