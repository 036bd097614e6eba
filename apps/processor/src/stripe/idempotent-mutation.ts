import type { ProcessorTransaction } from '../db/client.ts';
import type { FormParams } from './form-params.ts';

/** What a mutation sees of its idempotency key while it runs. */
interface MutationExecution {
  /** Stores `response` as the key's result inside `tx`: it commits with the charge or not at all. */
  complete(tx: ProcessorTransaction, response: Response): Promise<void>;
}

/**
 * Runs a POST under the request's `Idempotency-Key` (scoped to the account): a fresh key
 * runs `run` once, a finished key replays, a concurrent or reused key is refused with
 * Stripe's `idempotency_error`. Without a key, `run` simply runs.
 */
export type IdempotentMutation = (
  request: Request,
  scope: { accountId: string; params: FormParams },
  run: (exec: MutationExecution) => Promise<Response>,
) => Promise<Response>;
