import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutUntilAccepted, postPayment } from '../../test/support/payments-client.ts';
import { startTestLauncher, TEST_RESTART_POLICY } from '../../test/support/test-launcher.ts';
import type { RunningSystem } from './start-system.ts';
import { proxyCommand, proxyWebStats } from './web-topology.ts';

/**
 * Two real webs behind Debian's HAProxy with its resend turned on (`retry-on
 * all-retryable-errors`, `option redispatch 1`): a POST that web-1 received and died on is sent
 * again by the proxy to web-2, which meets web-1's idempotency key. The checkout is charged
 * once (the processor's ledger) and the client gets the original answer, a replay, or a 409
 * while the key is in flight, never a second payment.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let system: RunningSystem;
const logLines: string[] = [];

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const serverState = async (web: string) => {
  const stat = await proxyCommand(system.topologyDir!, 'show stat');
  const [header, ...rows] = stat.trim().split('\n');
  const status = header!.replace(/^# /, '').split(',').indexOf('status');
  return rows.map((r) => r.split(',')).find((r) => r[0] === 'webs' && r[1] === web)?.[status];
};

beforeAll(async () => {
  system = await startTestLauncher({
    webs: 2,
    proxyRetry: 'resend',
    pooler: true,
    restart: TEST_RESTART_POLICY,
    env: { WORKER_POLL_INTERVAL_MS: '300', WORKER_BACKOFF_BASE_MS: '200' },
    log: (line) => {
      logLines.push(line);
      if (process.env.ONCE_TEST_VERBOSE === '1') console.log(line);
    },
  });
}, 240_000);

afterAll(async () => {
  await system?.stop();
});

describe('several webs behind HAProxy', () => {
  it('runs each web, the proxy and the pooler as supervised parts; the public URL is the proxy', async () => {
    expect(system.supervisor.status().map((p) => p.name)).toEqual(
      expect.arrayContaining(['pooler', 'web-1', 'web-2', 'proxy']),
    );
    expect(system.webNames).toEqual(['web-1', 'web-2']);
    const outcome = await checkoutUntilAccepted(system.webUrl, randomUUID(), Date.now() + 30_000);
    expect(outcome.paymentId, JSON.stringify(outcome.attempts)).toBeDefined();
  }, 60_000);

  it('a POST resent to web-2 after web-1 died on it is charged once', async () => {
    const dir = system.topologyDir!;
    const sql = postgres(system.databaseUrl, { max: 2, onnotice: () => {} });
    const key = randomUUID();
    let paymentId: string | undefined;
    try {
      // Only web-1 gets the request; it stops at the cart's read, its key already taken.
      await proxyCommand(dir, 'disable server webs/web-2');
      const before = await proxyWebStats(dir);
      let unlock!: () => void;
      const locked = new Promise<void>((resolve) => {
        unlock = resolve;
      });
      let lockHeld!: () => void;
      const holding = new Promise<void>((resolve) => {
        lockHeld = resolve;
      });
      const lock = sql.begin(async (tx) => {
        await tx.unsafe('lock table products in access exclusive mode');
        lockHeld();
        await locked;
      });
      await holding;
      const answer = postPayment(system.webUrl, key);
      await until('web-1 to wait on the lock', async () => {
        const [row] = await sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where application_name = 'once-web' and wait_event_type = 'Lock'
            and query like '%products%'`;
        return row!.n > 0 ? true : undefined;
      });
      await proxyCommand(dir, 'enable server webs/web-2');
      await until('web-2 back up', async () =>
        (await serverState('web-2')) === 'UP' ? true : undefined,
      );
      system.supervisor.killForRestart('web-1');
      // web-2 has the resent POST now; the cart's read may wait on the lock there too.
      await sleep(1_000);
      unlock();
      await lock;

      const first = await answer;
      expect(
        first.status === 201 ||
          first.status === 200 ||
          (first.status === 409 && first.code === 'idempotency_key_in_use'),
        JSON.stringify(first),
      ).toBe(true);
      const after = await proxyWebStats(dir);
      const web = (stats: typeof after, name: string) => stats.find((s) => s.web === name)!;
      // The proxy resent it (a retry, to another web), and web-2 answered it.
      expect(web(after, 'web-1').retries + web(after, 'web-2').retries).toBeGreaterThan(
        web(before, 'web-1').retries + web(before, 'web-2').retries,
      );
      expect(web(after, 'web-2').answered).toBeGreaterThan(web(before, 'web-2').answered);

      const outcome = await checkoutUntilAccepted(system.webUrl, key, Date.now() + 60_000);
      expect(outcome.paymentId, JSON.stringify(outcome.attempts.slice(-3))).toBeDefined();
      paymentId = outcome.paymentId;
      if (first.paymentId) expect(first.paymentId).toBe(outcome.paymentId);
      let status = '';
      await until('the payment to succeed', async () => {
        const [row] = await sql<{ status: string }[]>`
          select status from payments where id = ${outcome.paymentId!}`;
        status = row?.status ?? '';
        return status === 'succeeded' ? true : undefined;
      }).catch(() => {});
      expect(status).toBe('succeeded');
      const [payments] = await sql<{ n: number }[]>`
        select count(*)::int as n from payments where idempotency_key = ${key}`;
      expect(payments!.n).toBe(1);
    } finally {
      await sql.end({ timeout: 2 });
    }
    const ledger = postgres(system.processorDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await ledger<{ n: number }[]>`
        select count(*)::int as n from ledger_entries
        where kind = 'charge' and metadata->>'payment_id' = ${paymentId!}`;
      expect(row!.n, `ledger charges for ${paymentId}`).toBe(1);
    } finally {
      await ledger.end({ timeout: 2 });
    }
  }, 180_000);

  it('the proxy and the pooler SIGKILLed come back; a checkout retried with its key completes once', async () => {
    for (const part of ['proxy', 'pooler']) {
      system.supervisor.killForRestart(part);
      const outcome = await checkoutUntilAccepted(system.webUrl, randomUUID(), Date.now() + 60_000);
      expect(
        outcome.paymentId,
        `${part}: ${JSON.stringify(outcome.attempts.slice(-3))}`,
      ).toBeDefined();
      await until(`${part} up again`, async () => {
        const status = system.supervisor.status().find((p) => p.name === part);
        return status?.state === 'up' && status.restarts === 1 ? true : undefined;
      });
    }
  }, 150_000);
});
