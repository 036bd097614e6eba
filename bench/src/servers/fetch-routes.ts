import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import type { Idempotency } from '@once/idempotency';
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

/**
 * `POST /fetch/guarded`: the same handler under `fetchIdempotency().handle` (built once, as the
 * apps use it: the validated input is the fingerprint, so the body is read once), completing in
 * its transaction (leased mode); `POST /fetch/guarded-atomic`: the same in atomic mode.
 */
export function createGuardedFetchHandler(
  db: Database,
  idempotency: Idempotency<Transaction>,
  mode: 'leased' | 'atomic' = 'leased',
) {
  const http = fetchIdempotency(idempotency);
  const scope = {
    tenantId: BENCH_TENANT,
    operation: mode === 'atomic' ? 'bench.pay.rest.atomic' : 'bench.pay.rest',
    policy: { mode },
  };
  return async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    return http.handle(request, { ...scope, fingerprintInput: input }, (exec) =>
      db.transaction(async (tx) => {
        const result = await writePayment(tx, input, exec.key ?? randomUUID());
        const response = Response.json(result, { status: 201 });
        await exec.complete(tx, response);
        return response;
      }),
    );
  };
}
