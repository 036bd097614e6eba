import { AsyncLocalStorage } from 'node:async_hooks';
import type { Idempotency } from '@once/idempotency';
import type { Transaction } from './database.ts';

/**
 * `createIdempotencyPlugin` takes ONE engine when the procedures are defined (module load),
 * but this API gets its database, and so its engine, per deployment through the context
 * (the web process builds it at start; each test file has its own database). This facade is
 * that one engine: it forwards every call to the engine of the request being served, which
 * the `idempotentProcedure` puts in scope. Calling it outside a request is a bug and throws.
 */
const currentEngine = new AsyncLocalStorage<Idempotency<Transaction>>();

function engine(): Idempotency<Transaction> {
  const found = currentEngine.getStore();
  if (!found) throw new Error('No idempotency engine in scope: use idempotentProcedure');
  return found;
}

export const requestScopedIdempotency: Idempotency<Transaction> = {
  execute: (request, handler) => engine().execute(request, handler),
  passthrough: (request) => engine().passthrough(request),
  policyFor: (operation, override) => engine().policyFor(operation, override),
  emit: (event) => engine().emit(event),
};

/** Runs `fn` (the rest of the procedure chain) with `idempotency` as the current engine. */
export function withIdempotencyEngine<T>(idempotency: Idempotency<Transaction>, fn: () => T): T {
  return currentEngine.run(idempotency, fn);
}
