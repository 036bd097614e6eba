import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import type { Idempotency, OperationPolicy, StoredResponse } from '@once/idempotency';
import { fetchIdempotency, responseOf, storedJson } from '@once/idempotency/fetch';
import {
  BENCH_TENANT,
  parsePayInput,
  type Transaction,
  writePayment,
  writeUnguarded,
} from './payment-write.ts';

export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * `POST /fetch/plain`: the REST-style handler alone (baseline of the wrapper); with `floor`
 * (`POST /fetch/floor`, `/fetch/floor-in-transaction`) plus its floor row (`writeUnguarded`).
 */
export function createPlainFetchHandler(db: Database, floor?: 'durable' | 'in-transaction') {
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const key = request.headers.get('idempotency-key') ?? randomUUID();
    return Response.json(await writeUnguarded(db, input, key, floor), { status: 201 });
  };
}

/** The guarded fetch variants' policies: leased, atomic (adaptive pre-check), atomic always reading first. */
const FETCH_POLICIES = {
  leased: { mode: 'leased' },
  atomic: { mode: 'atomic' },
  'atomic-always-read': { mode: 'atomic', precheck: true },
} as const satisfies Record<string, OperationPolicy>;

/**
 * `POST /fetch/guarded[-atomic[-always-read]]`: the same handler under
 * `fetchIdempotency().handle` as the apps use it (the validated input is the fingerprint),
 * completing in its transaction with the stored form (`storedJson`).
 */
export function createGuardedFetchHandler(
  db: Database,
  idempotency: Idempotency<Transaction>,
  variant: keyof typeof FETCH_POLICIES = 'leased',
) {
  const http = fetchIdempotency(idempotency);
  const operation = `bench.pay.rest.${variant}`;
  const policy = FETCH_POLICIES[variant];
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const scope = { tenantId: BENCH_TENANT, operation, policy, fingerprintInput: input };
    return http.handle(request, scope, (exec) =>
      db.transaction(async (tx) => {
        let stored: StoredResponse | undefined;
        await writePayment(tx, input, exec.key ?? randomUUID(), (result) => {
          stored = storedJson(result, { status: 201 });
          return exec.complete(tx, stored);
        });
        return responseOf(stored!);
      }),
    );
  };
}
