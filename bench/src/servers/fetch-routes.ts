import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import type { Idempotency, OperationPolicy } from '@once/idempotency';
import { fetchIdempotency } from '@once/idempotency/fetch';
import { sql } from 'drizzle-orm';
import { BENCH_TENANT, parsePayInput, type Transaction, writePayment } from './payment-write.ts';

/**
 * `POST /fetch/plain`: the REST-style handler alone (baseline of the wrapper). With
 * `extraDurableWrite`, `POST /fetch/floor`: plus one autocommit INSERT of a small row, the least
 * any durable guard must add.
 */
export function createPlainFetchHandler(
  db: Database,
  options: { extraDurableWrite?: boolean } = {},
) {
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const key = request.headers.get('idempotency-key') ?? randomUUID();
    if (options.extraDurableWrite)
      await db.execute(sql`insert into bench_floor (id) values (${key})`);
    const result = await db.transaction((tx) => writePayment(tx, input, key));
    return Response.json(result, { status: 201 });
  };
}

/** The guarded fetch variants' policies: leased, atomic (adaptive pre-check), atomic always reading first. */
const FETCH_POLICIES = {
  leased: { mode: 'leased' },
  atomic: { mode: 'atomic' },
  'atomic-always-read': { mode: 'atomic', precheck: true },
} as const satisfies Record<string, OperationPolicy>;

/**
 * `POST /fetch/guarded`: the same handler under `fetchIdempotency().handle` (built once, as the
 * apps use it: the validated input is the fingerprint, so the body is read once), completing in
 * its transaction (leased mode); `POST /fetch/guarded-atomic`: the same in atomic mode;
 * `POST /fetch/guarded-atomic-always-read`: atomic mode with `precheck: true`.
 */
export function createGuardedFetchHandler(
  db: Database,
  idempotency: Idempotency<Transaction>,
  variant: keyof typeof FETCH_POLICIES = 'leased',
) {
  const http = fetchIdempotency(idempotency);
  const scope = {
    tenantId: BENCH_TENANT,
    operation: `bench.pay.rest.${variant}`,
    policy: FETCH_POLICIES[variant],
  };
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    return http.handle(request, { ...scope, fingerprintInput: input }, (exec) =>
      db.transaction(async (tx) => {
        let response: Response | undefined;
        await writePayment(tx, input, exec.key ?? randomUUID(), (result) => {
          response = Response.json(result, { status: 201 });
          return exec.complete(tx, response);
        });
        return response!;
      }),
    );
  };
}
