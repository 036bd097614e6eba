import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import { computeFingerprint } from '../core/fingerprint.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

const CONCURRENCY = 60;
const ROUNDS = 20;

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  // One pool connection per request: every reservation is a separate Postgres backend.
  t = await createIdempotencyTestDatabase('concurrency', CONCURRENCY + 5);
  await t.sql`create table side_effects (round int, request int)`;
});
afterAll(async () => {
  await t?.drop();
});

describe('concurrency', () => {
  it(`${CONCURRENCY} truly concurrent requests with one key run the handler exactly once (${ROUNDS} rounds)`, async () => {
    const idempotency = createIdempotency({
      store: createDrizzleStore(t.db),
      storeTimeoutMs: 10_000,
    });
    // Warm the pool so requests really overlap instead of queueing behind connection setup.
    await Promise.all(Array.from({ length: CONCURRENCY }, () => t.sql`select pg_sleep(0.05)`));
    const tally = { executed: 0, replayed: 0, inUse: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const key = `round-${round}`;
      const fingerprint = computeFingerprint('pay', { round });
      let release!: () => void;
      const start = new Promise<void>((resolve) => {
        release = resolve;
      });
      const requests = Array.from({ length: CONCURRENCY }, async (_, request) => {
        await start;
        try {
          const outcome = await idempotency.execute(
            { tenantId: 't', operation: 'pay', key, fingerprint },
            async (exec) =>
              t.db.transaction(async (tx) => {
                await tx.execute(sql`insert into side_effects values (${round}, ${request})`);
                await tx.execute(sql`select pg_sleep(0.02)`);
                const response = {
                  status: 201,
                  headers: {},
                  body: JSON.stringify({ round, request }),
                };
                await exec.complete(tx, response);
                return response;
              }),
          );
          return outcome.kind;
        } catch (error) {
          if (isIdempotencyError(error) && error.code === 'idempotency_key_in_use') return 'in_use';
          throw error;
        }
      });
      release();
      const outcomes = await Promise.all(requests);
      tally.executed += outcomes.filter((o) => o === 'executed').length;
      tally.replayed += outcomes.filter((o) => o === 'replayed').length;
      tally.inUse += outcomes.filter((o) => o === 'in_use').length;
      expect(outcomes.filter((o) => o === 'executed')).toHaveLength(1);
      const [{ n }] =
        (await t.sql`select count(*)::int as n from side_effects where round = ${round}`) as unknown as [
          { n: number },
        ];
      expect(n).toBe(1);
    }
    expect(tally.executed).toBe(ROUNDS);
    expect(tally.inUse + tally.replayed).toBe(ROUNDS * (CONCURRENCY - 1));
    // Seen at least once over all rounds: the requests did overlap the running handler.
    expect(tally.inUse).toBeGreaterThan(0);
    console.log(`concurrency: ${JSON.stringify(tally)}`);
  }, 120_000);
});
