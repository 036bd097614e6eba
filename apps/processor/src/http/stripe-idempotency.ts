import type { ProcessorDatabase } from '../db/client.ts';
import type { IdempotentMutation } from './idempotent-mutation.ts';

// TEMPORARY (first increment): runs every mutation without key handling until
// @once/idempotency's fetch adapter lands; replaced by the real wrapper.
export function createStripeIdempotency(_db: ProcessorDatabase): IdempotentMutation {
  return (_request, _scope, run) => run({ complete: async () => {} });
}
