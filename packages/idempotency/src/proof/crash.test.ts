import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';
import { fixtureProcesses } from './fixtures/processes.ts';

const FIXTURE = join(import.meta.dirname, 'fixtures/phase-holder.ts');
let t: IdempotencyTestDatabase;
const processes = fixtureProcesses(() => t.url);
const startHolder = (env: Record<string, string>) => processes.start(FIXTURE, env);

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('crash');
  await t.sql`create table side_effects (key text, phase text, pid int)`;
});
afterAll(async () => {
  processes.killAll();
  await t?.drop();
});

async function effects(key: string): Promise<string[]> {
  const rows = await t.sql`select phase from side_effects where key = ${key} order by phase`;
  return rows.map((r) => r.phase as string);
}

async function waitForLeaseExpiry(key: string) {
  await expect
    .poll(
      async () =>
        (
          await t.sql`select locked_until < now() as expired from idempotency_keys where key = ${key}`
        )[0]?.expired,
      {
        timeout: 10_000,
        interval: 100,
      },
    )
    .toBe(true);
}

describe('crash recovery with real processes', () => {
  for (const hangAt of ['started', 'ride_created', 'charged'] as const) {
    it(`SIGKILL inside phase "${hangAt}": the retry resumes there and never repeats a committed phase's side effect`, async () => {
      const key = `kill-${hangAt}`;
      const holder = startHolder({ MODE: 'phases', KEY: key, HANG_AT: hangAt });
      await holder.waitFor(`IN_PHASE ${hangAt}`);
      holder.child.kill('SIGKILL');
      await holder.exited;
      await waitForLeaseExpiry(key);
      // The killed process committed every phase before the one it died in, and nothing of that one.
      const [killed] = await t.sql`select recovery_point from idempotency_keys where key = ${key}`;
      expect(killed?.recovery_point).toBe(hangAt);

      const retry = startHolder({ MODE: 'phases', KEY: key });
      const result = JSON.parse((await retry.waitFor('RESULT ')).slice('RESULT '.length));
      expect(result.kind).toBe('executed');
      expect(JSON.parse(result.response.body).ride).toEqual({ rideId: 42 });
      // Every phase's side effect exactly once: the killed phase's uncommitted write vanished.
      expect(await effects(key)).toEqual(['charge', 'create_ride', 'send_receipt']);
      // Phases before the crash ran in the killed process, the rest in the retry.
      const order = ['create_ride', 'charge', 'send_receipt'];
      const firstResumed = order.indexOf(
        { started: 'create_ride', ride_created: 'charge', charged: 'send_receipt' }[hangAt],
      );
      const byPhase = new Map(
        (await t.sql`select phase, pid from side_effects where key = ${key}`).map((r) => [
          r.phase as string,
          r.pid as number,
        ]),
      );
      for (const [i, phase] of order.entries()) {
        expect(byPhase.get(phase), phase).toBe(
          i < firstResumed ? holder.child.pid : retry.child.pid,
        );
      }
      const [row] =
        await t.sql`select state, acquired_via from idempotency_keys where key = ${key}`;
      expect(row).toEqual({ state: 'completed', acquired_via: 'expired_lease' });
    }, 30_000);
  }

  it('SIGKILL after a committed phase under the "unknown" policy parks the key: retries get 409 outcome_unknown', async () => {
    const key = 'kill-unknown';
    const holder = startHolder({ MODE: 'phases', KEY: key, HANG_AT: 'charged', POLICY: 'unknown' });
    await holder.waitFor('IN_PHASE charged');
    holder.child.kill('SIGKILL');
    await holder.exited;
    await waitForLeaseExpiry(key);
    const idempotency = createIdempotency({ store: createDrizzleStore(t.db) });
    let error: unknown;
    try {
      await idempotency.execute(
        { tenantId: 't', operation: 'ride', key, fingerprint: 'fp' },
        async () => ({
          status: 200,
          headers: {},
          body: null,
        }),
      );
    } catch (e) {
      error = e;
    }
    expect(isIdempotencyError(error) && error.code).toBe('idempotency_outcome_unknown');
    expect(await effects(key)).toEqual(['charge', 'create_ride']);
  }, 30_000);

  it('a SIGSTOPped holder past its lease is taken over; after SIGCONT it can neither renew, advance nor complete', async () => {
    const key = 'stopped-holder';
    const holder = startHolder({ MODE: 'late-holder', KEY: key, LEASE_MS: '600', SLEEP_MS: '300' });
    await holder.waitFor('HOLDING');
    holder.child.kill('SIGSTOP');
    await waitForLeaseExpiry(key);

    const idempotency = createIdempotency({ store: createDrizzleStore(t.db) });
    const takeover = await idempotency.execute(
      { tenantId: 't', operation: 'ride', key, fingerprint: 'fp' },
      async () => ({
        status: 200,
        headers: {},
        body: '"new holder"',
      }),
    );
    expect(takeover.kind).toBe('executed');

    holder.child.kill('SIGCONT');
    const late = JSON.parse((await holder.waitFor('LATE ')).slice('LATE '.length));
    expect(late).toEqual({
      renew: 'idempotency_lease_lost',
      release: 'lost',
      advance: 'idempotency_lease_lost',
      complete: 'idempotency_lease_lost',
      execute: 'idempotency_lease_lost',
    });
    // The late holder's transaction rolled back: no side effect, and the new holder's response stands.
    expect(await effects(key)).toEqual([]);
    const [row] =
      await t.sql`select state, response_body, recovery_point from idempotency_keys where key = ${key}`;
    expect(row).toEqual({
      state: 'completed',
      response_body: '"new holder"',
      recovery_point: 'started',
    });
  }, 30_000);
});
