import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retrySerializationFailures } from './serialization-retry.ts';
import { createEmptyTestDatabase, type EmptyTestDatabase } from './testing/index.ts';
import { isSerializationFailure } from './transient-error.ts';

describe('isSerializationFailure', () => {
  it('is 40001 and 40P01 only, also wrapped (Drizzle puts the driver error in `cause`)', () => {
    expect(isSerializationFailure({ code: '40001' })).toBe(true);
    expect(isSerializationFailure({ code: '40P01' })).toBe(true);
    expect(isSerializationFailure(new Error('Failed query', { cause: { code: '40001' } }))).toBe(
      true,
    );
    // Transient, but the commit may have happened: not for a blind re-run.
    expect(isSerializationFailure({ code: '57P01' })).toBe(false);
    expect(isSerializationFailure({ code: 'ECONNRESET' })).toBe(false);
    expect(isSerializationFailure({ code: '23505' })).toBe(false);
    expect(isSerializationFailure(undefined)).toBe(false);
  });
});

describe('retrySerializationFailures', () => {
  const failing = (codes: string[]) => {
    let runs = 0;
    return {
      runs: () => runs,
      transaction: async () => {
        const code = codes[runs++];
        if (code) throw Object.assign(new Error(`failed with ${code}`), { code });
        return 'committed';
      },
    };
  };

  it('runs the transaction again after 40001 and 40P01, and reports each retry', async () => {
    const t = failing(['40001', '40P01']);
    const retried: (string | undefined)[] = [];
    const result = await retrySerializationFailures(t.transaction, {
      baseDelayMs: 1,
      onRetry: (_attempt, code) => retried.push(code),
    });
    expect(result).toBe('committed');
    expect(t.runs()).toBe(3);
    expect(retried).toEqual(['40001', '40P01']);
  });

  it('throws any other error at once, and the last failure once the attempts are spent', async () => {
    const other = failing(['23505']);
    await expect(retrySerializationFailures(other.transaction)).rejects.toThrow(/23505/);
    expect(other.runs()).toBe(1);
    const always = failing(['40001', '40001', '40001']);
    await expect(
      retrySerializationFailures(always.transaction, { attempts: 3, baseDelayMs: 1 }),
    ).rejects.toThrow(/40001/);
    expect(always.runs()).toBe(3);
  });

  describe('against PostgreSQL at SERIALIZABLE', () => {
    let database: EmptyTestDatabase;
    let sql: postgres.Sql;
    beforeAll(async () => {
      database = await createEmptyTestDatabase('serialization_retry');
      sql = postgres(database.url, { max: 10, onnotice: () => {} });
      await sql`create table on_call (doctor text primary key, on_call boolean not null)`;
    });
    afterAll(async () => {
      await sql?.end();
      await database?.drop();
    });

    /**
     * The classic write skew: each transaction checks that another doctor stays on call, then
     * goes off call itself. Both read before either writes (a barrier), so SERIALIZABLE must
     * abort one with 40001. Retried, that one sees the other's commit and stays on call.
     */
    async function offCall(
      doctor: string,
      barrier: { arrive: () => Promise<void> },
      retry: boolean,
    ): Promise<'off' | 'stayed'> {
      let firstRun = true;
      const transaction = () =>
        sql.begin('isolation level serializable', async (tx) => {
          const [row] = await tx<{ n: number }[]>`
            select count(*)::int as n from on_call where on_call`;
          if (firstRun) {
            firstRun = false;
            await barrier.arrive();
          }
          if (row!.n < 2) return 'stayed' as const;
          await tx`update on_call set on_call = false where doctor = ${doctor}`;
          return 'off' as const;
        });
      return retry ? retrySerializationFailures(transaction, { baseDelayMs: 1 }) : transaction();
    }

    function twoPartyBarrier() {
      let arrived = 0;
      let open: () => void = () => {};
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      return {
        arrive: async () => {
          if (++arrived === 2) open();
          await opened;
        },
      };
    }

    async function reset() {
      await sql`delete from on_call`;
      await sql`insert into on_call values ('alice', true), ('bob', true)`;
    }

    it('without the retry one of two conflicting transactions fails with 40001', async () => {
      await reset();
      const barrier = twoPartyBarrier();
      const results = await Promise.allSettled([
        offCall('alice', barrier, false),
        offCall('bob', barrier, false),
      ]);
      const failed = results.filter((r) => r.status === 'rejected');
      expect(failed).toHaveLength(1);
      expect(isSerializationFailure((failed[0] as PromiseRejectedResult).reason)).toBe(true);
    });

    it('with it both finish: one goes off call, the retried one sees that and stays', async () => {
      await reset();
      const barrier = twoPartyBarrier();
      const results = await Promise.all([
        offCall('alice', barrier, true),
        offCall('bob', barrier, true),
      ]);
      expect(results.sort()).toEqual(['off', 'stayed']);
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from on_call where on_call`;
      expect(row!.n).toBe(1);
    });
  });
});
