import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import type { StoredResponse } from '../core/types.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * The per-principal new-key cap holds under concurrency in both modes: a burst of BURST new
 * keys from one session, released at once, runs at most CAP handlers; the refused requests
 * write nothing (no key, no effect, no count: `counted` is how many intervals of the allowance
 * the principal's theoretical arrival time runs ahead of now).
 */
const BURST = 30;
const CAP = 3;

let t: IdempotencyTestDatabase;
type Tx = TransactionOf<typeof t.db>;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('rate_burst', BURST + 5);
  await t.sql`create table effects (tenant_id text not null, key text not null)`;
});
afterAll(async () => {
  await t?.drop();
});

/** One effect and the key in one transaction, held open a little so the burst overlaps it. */
const pay =
  (tenantId: string, key: string) =>
  (exec: Execution<Tx>): Promise<StoredResponse> =>
    t.db.transaction(async (tx) => {
      await tx.execute(sql`insert into effects values (${tenantId}, ${key})`);
      await tx.execute(sql`select pg_sleep(0.05)`);
      const response = { status: 201, headers: {}, body: '{"paid":true}' };
      await exec.complete(tx as Tx, response);
      return response;
    });

async function burst(
  mode: 'atomic' | 'leased',
  handler: (tenantId: string, key: string) => (exec: Execution<Tx>) => Promise<StoredResponse>,
) {
  const idempotency = createIdempotency<Tx>({
    store: createDrizzleStore(t.db),
    defaults: { mode },
    rateLimit: { maxNewKeys: CAP, windowMs: 60_000 },
    storeTimeoutMs: 10_000,
  });
  const tenantId = `burst-${mode}-${Math.random()}`;
  // Warm the pool so the burst really runs side by side.
  await Promise.all(Array.from({ length: BURST }, () => t.sql`select 1`));
  let go!: () => void;
  const start = new Promise<void>((resolve) => {
    go = resolve;
  });
  const requests = Array.from({ length: BURST }, async (_, i) => {
    await start;
    const key = `k-${i}`;
    try {
      await idempotency.execute(
        { tenantId, operation: 'pay', key, fingerprint: 'fp', principal: 'session-1' },
        handler(tenantId, key),
      );
      return 'executed';
    } catch (error) {
      if (isIdempotencyError(error)) return error.code;
      return 'failed';
    }
  });
  go();
  const outcomes = await Promise.all(requests);
  const [row] = await t.sql`
    select (select count(*)::int from effects where tenant_id = ${tenantId}) as effects,
           (select count(*)::int from idempotency_keys where tenant_id = ${tenantId}) as keys,
           (select greatest(ceil(extract(epoch from max(theoretical_arrival) - now())
                                 * 1000 / ${60_000 / CAP}), 0)::int
              from idempotency_rate_limits where tenant_id = ${tenantId}) as counted`;
  const tally = (outcome: string) => outcomes.filter((o) => o === outcome).length;
  return { row, executed: tally('executed'), limited: tally('idempotency_rate_limited') };
}

describe(`a burst of ${BURST} new keys from one session against a cap of ${CAP}`, () => {
  for (const mode of ['atomic', 'leased'] as const) {
    it(`${mode}: at most ${CAP} run; the refused write nothing`, async () => {
      const { row, executed, limited } = await burst(mode, pay);
      expect(executed).toBe(CAP);
      expect(limited).toBe(BURST - CAP);
      expect(row).toEqual({ effects: CAP, keys: CAP, counted: CAP });
    });
  }

  it('atomic: handlers that fail give their count back (the allowance is spent only on stored keys)', async () => {
    const { row, executed } = await burst('atomic', () => async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('card declined upstream');
    });
    expect(executed).toBe(0);
    expect(row).toEqual({ effects: 0, keys: 0, counted: 0 });
  });
});
