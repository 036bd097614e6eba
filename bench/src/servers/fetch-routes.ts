import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import type { Idempotency } from '@once/idempotency';
import { storedResponseFrom, withIdempotency } from '@once/idempotency/fetch';
import { BENCH_TENANT, parsePayInput, type Transaction, writePayment } from './payment-write.ts';

/** `POST /fetch/plain`: the REST-style handler alone (baseline of the wrapper). */
export function createPlainFetchHandler(db: Database) {
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const key = request.headers.get('idempotency-key') ?? randomUUID();
    const result = await db.transaction((tx) => writePayment(tx, input, key));
    return Response.json(result, { status: 201 });
  };
}

/** `POST /fetch/guarded`: the same handler under `withIdempotency`, completing in its transaction. */
export function createGuardedFetchHandler(db: Database, idempotency: Idempotency<Transaction>) {
  return withIdempotency<Transaction>(
    async (request, exec) => {
      const input = parsePayInput(await request.json());
      return db.transaction(async (tx) => {
        const result = await writePayment(tx, input, exec.key ?? randomUUID());
        const response = Response.json(result, { status: 201 });
        await exec.complete(tx, await storedResponseFrom(response));
        return response;
      });
    },
    { idempotency, operation: 'bench.pay.rest', getTenantId: () => BENCH_TENANT },
  );
}
