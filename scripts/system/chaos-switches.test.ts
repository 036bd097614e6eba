import { randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { DEMO_API_KEY_VARIABLES, SECRET_VARIABLES } from '@once/env';
import { verifyInvariant } from '@once/invariant';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutUntilAccepted } from '../../test/support/payments-client.ts';
import {
  expectFreshSecrets,
  runningEnvironment,
  secretsHeldBy,
} from '../../test/support/running-secrets.ts';
import { startTestLauncher, TEST_RESTART_POLICY } from '../../test/support/test-launcher.ts';
import { type RunningSystem, repoRoot } from './start-system.ts';

/**
 * The demo's chaos switches on a real launched system, pressed the way the cockpit presses
 * them: over the web's tRPC API with an operator session. After each, a payment completes and
 * the databases show it charged exactly once; the launcher's view shows the part back up.
 * One worker, so a payment after a worker fault can only be charged by the one that came back.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = 2_000;
const keys: string[] = [];
const logLines: string[] = [];
// biome-ignore lint/suspicious/noControlCharactersInRegex: the launcher colours its prefixes
const ANSI_COLOUR = /\u001b\[[0-9;]*m/g;
let system: RunningSystem;
let operatorCookie: string;

interface TrpcAnswer {
  status: number;
  body: { result?: { data?: unknown }; error?: { data?: { code?: string } } };
  setCookie: string[];
}

async function trpc(
  path: string,
  input: unknown,
  headers: Record<string, string> = {},
): Promise<TrpcAnswer> {
  const response = await fetch(`${system.webUrl}/api/trpc/${path}`, {
    method: input === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: input === undefined ? undefined : JSON.stringify(input),
    signal: AbortSignal.timeout(15_000),
  });
  return {
    status: response.status,
    body: (await response.json()) as TrpcAnswer['body'],
    setCookie: response.headers.getSetCookie(),
  };
}

async function signIn(role: 'operator' | 'shopper'): Promise<string> {
  const answer = await trpc('session.start', {
    demoTenantId: 'tenant_a',
    role,
    ...(role === 'operator' ? { operatorCode: system.operatorCode } : {}),
  });
  expect(answer.status).toBe(200);
  return answer.setCookie[0]!.split(';')[0]!;
}

async function press(name: string): Promise<string> {
  const answer = await trpc('ops.chaosPress', { switch: name }, { cookie: operatorCookie });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body.result!.data as { did: string }).did;
}

type Part = { name: string; state: string; restarts: number };
async function parts(): Promise<Part[]> {
  const answer = await trpc('ops.chaosStatus', undefined, { cookie: operatorCookie });
  const data = answer.body.result?.data as { enabled: boolean; parts: Part[] };
  expect(data.enabled).toBe(true);
  return data.parts;
}

/** Polls the cockpit's view of one part until `check` holds; the states seen on the way. */
async function watchPart(
  name: string,
  check: (part: Part) => boolean,
  timeoutMs: number,
): Promise<string[]> {
  const seen: string[] = [];
  let last: Part | undefined;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const part = (await parts().catch(() => [])).find((p) => p.name === name);
    last = part ?? last;
    if (part && seen.at(-1) !== part.state) seen.push(part.state);
    if (part && check(part)) return seen;
    await sleep(100);
  }
  // The restart count too: "up" alone cannot tell a part never killed from one restarted twice;
  // and the part's last launcher lines, since CI keeps only this message.
  const said = logLines
    .map((line) => line.replace(ANSI_COLOUR, ''))
    .filter((line) => line.startsWith(name))
    .slice(-8);
  throw new Error(
    `${name} never reached the expected state; saw ${seen.join(' -> ')}, last ${JSON.stringify(last)}; ` +
      `its last lines: ${said.join(' | ')}`,
  );
}

async function settled(paymentId: string): Promise<void> {
  const sql = postgres(system.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    let status = '';
    for (let i = 0; i < 200 && status !== 'succeeded'; i++) {
      const rows = await sql<{ status: string }[]>`
        select status from payments where id = ${paymentId}`;
      status = rows[0]?.status ?? '';
      if (status !== 'succeeded') await sleep(200);
    }
    expect(status).toBe('succeeded');
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Charges of one payment in the processor's own ledger (the truth about money). */
async function ledgerCharges(paymentId: string): Promise<number> {
  const sql = postgres(system.processorDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from ledger_entries
      where kind = 'charge' and metadata->>'payment_id' = ${paymentId}`;
    return row!.n;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Pays over REST with one key, retried with that key through any outage, until it
 * succeeded; then counts the ledger: "charged once" is one charge there, not a status.
 */
async function payAndSettle(): Promise<string> {
  const key = randomUUID();
  keys.push(key);
  const outcome = await checkoutUntilAccepted(system.webUrl, key, Date.now() + 45_000);
  expect(outcome.paymentId, JSON.stringify(outcome.attempts.slice(-3))).toBeDefined();
  await settled(outcome.paymentId!);
  expect(await ledgerCharges(outcome.paymentId!), 'ledger charges').toBe(1);
  return outcome.paymentId!;
}

/** How often the processor applied faults of `kind` (its own count, cleared faults included). */
async function faultTaken(kind: string): Promise<number> {
  const response = await fetch(`${system.processorUrl}/admin/faults/uses`, {
    headers: { 'x-admin-token': system.envFor('processor').PROCESSOR_ADMIN_TOKEN! },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { by_kind: Record<string, number> }).by_kind[kind] ?? 0;
}

beforeAll(async () => {
  system = await startTestLauncher({
    pgDurability: 'durable',
    chaos: true,
    restart: TEST_RESTART_POLICY,
    env: {
      WORKER_LEASE_MS: String(LEASE_MS),
      WORKER_POLL_INTERVAL_MS: '300',
      WORKER_BACKOFF_BASE_MS: '200',
    },
    log: (line) => logLines.push(line),
  });
  operatorCookie = await signIn('operator');
}, 240_000);

afterAll(async () => {
  await system?.stop();
});

describe('chaos switches pressed through the web as an operator', () => {
  // First, before any part is killed: what `npm run demo` handed its parts. No secret the
  // parts hold (read from /proc/<pid>/environ) is written in the repository or the logs.
  it('npm run demo: the launcher hands every part secrets made for this run', () => {
    const isDemoApiKey = (name: string) =>
      (DEMO_API_KEY_VARIABLES as readonly string[]).includes(name);
    // Every secret but the demo merchants' API keys: on loopback, the demo keeps the public ones.
    const launcherSecrets = SECRET_VARIABLES.filter((name) => !isDemoApiKey(name));
    const held = system.supervisor
      .status()
      .filter((part) => part.name !== 'postgres')
      .flatMap((part) =>
        secretsHeldBy(part.name, runningEnvironment(part.pid, system.envFor(part.name))),
      );
    expectFreshSecrets(repoRoot, held, logLines, [
      ...launcherSecrets,
      'ONCE_CHAOS_SECRET',
      'DATABASE_URL password',
    ]);
    expect(held.filter((h) => isDemoApiKey(h.variable))).toEqual([]);
    // One set per run, shared by the parts that must agree (the webhook signer and checker).
    const web = system.envFor('web');
    const processor = system.envFor('processor');
    expect(web.PROCESSOR_WEBHOOK_SECRET).toBe(processor.PROCESSOR_WEBHOOK_SECRET);
    expect(web.PROCESSOR_ADMIN_TOKEN).toBe(processor.PROCESSOR_ADMIN_TOKEN);
  });

  it('the control channel is on loopback and refuses a caller without the secret', async () => {
    expect(new URL(system.chaos!.url).hostname).toBe('127.0.0.1');
    const refused = await fetch(`${system.chaos!.url}/switches/kill_worker`, { method: 'POST' });
    expect(refused.status).toBe(401);
    const wrong = await fetch(`${system.chaos!.url}/parts`, {
      headers: { authorization: 'Bearer not-the-secret' },
    });
    expect(wrong.status).toBe(401);
  });

  it('the demo listens on loopback only, and a demo operator needs the run’s code', async () => {
    expect(system.host).toBe('127.0.0.1');
    const port = new URL(system.webUrl).port;
    // This machine's other addresses (if it has any) do not reach the web app.
    const elsewhere = Object.values(networkInterfaces())
      .flat()
      .filter((a) => a && a.family === 'IPv4' && !a.internal)
      .map((a) => a!.address);
    for (const address of elsewhere) {
      await expect(
        fetch(`http://${address}:${port}/api/health`, { signal: AbortSignal.timeout(3_000) }),
        address,
      ).rejects.toThrow();
    }
    for (const operatorCode of [undefined, 'not-the-code-of-this-run']) {
      const answer = await trpc('session.start', {
        demoTenantId: 'tenant_a',
        role: 'operator',
        operatorCode,
      });
      expect(answer.status).toBe(401);
      expect(answer.body.error?.data?.code).toBe('operator_code_invalid');
      // No session; at most the record its wrong codes are counted against (once_signin).
      expect(answer.setCookie.filter((c) => !c.startsWith('once_signin='))).toEqual([]);
    }
  });

  it('a shopper is refused every switch', async () => {
    const shopper = await signIn('shopper');
    const answer = await trpc('ops.chaosPress', { switch: 'kill_worker' }, { cookie: shopper });
    expect(answer.status).toBe(403);
    expect(answer.body.error?.data?.code).toBe('operator_required');
    expect((await parts()).find((p) => p.name === 'worker-1')?.restarts).toBe(0);
  });

  it('kill a worker: it restarts, and the next payment is charged once', async () => {
    expect(await press('kill_worker')).toMatch(/^worker-1 \(pid \d+\) killed with SIGKILL/);
    // A second press at once is refused, and kills nothing.
    const again = await trpc(
      'ops.chaosPress',
      { switch: 'kill_worker' },
      { cookie: operatorCookie },
    );
    expect(again.status).toBe(429);
    expect(again.body.error?.data?.code).toBe('chaos_switch_rate_limited');
    const seen = await watchPart('worker-1', (p) => p.state === 'up' && p.restarts === 1, 30_000);
    expect(seen).toContain('up');
    await payAndSettle();
  }, 90_000);

  it('pause a worker past its lease: paused, then resumed on its own; the payment completes', async () => {
    expect(await press('pause_worker')).toMatch(/^worker-1 \(pid \d+\) paused with SIGSTOP/);
    expect((await parts()).find((p) => p.name === 'worker-1')?.state).toBe('paused');
    // Paid while the only worker is stopped: charged after it resumes, once.
    const paying = payAndSettle();
    const seen = await watchPart('worker-1', (p) => p.state === 'up', LEASE_MS + 10_000);
    expect(seen).toEqual(['paused', 'up']);
    await paying;
  }, 90_000);

  it('crash-restart PostgreSQL: it comes back on the same data, and the next payment is charged once', async () => {
    expect(await press('pg_crash_restart')).toMatch(/^PostgreSQL \(pid \d+\) killed with SIGKILL/);
    await watchPart('postgres', (p) => p.state === 'up' && p.restarts === 1, 60_000);
    await payAndSettle();
  }, 120_000);

  it('processor charges then drops the connection: the worker retries with the same key, charged once', async () => {
    const before = await faultTaken('charge_then_drop');
    expect(await press('processor_charge_then_drop')).toMatch(
      /charge is made, then the connection is dropped/,
    );
    await payAndSettle();
    // The switch's fault bit this payment's charge (the processor counts it), not nothing.
    expect(await faultTaken('charge_then_drop')).toBe(before + 1);
  }, 90_000);

  it("drop this browser's next payment answer: the server commits, the browser sees a reset; the retry is a replay", async () => {
    const answer = await trpc(
      'ops.chaosPress',
      { switch: 'drop_next_response' },
      {
        cookie: operatorCookie,
      },
    );
    expect(answer.status).toBe(200);
    const dropCookie = answer.setCookie
      .find((c) => c.startsWith('once_chaos_drop='))!
      .split(';')[0]!;
    const key = randomUUID();
    keys.push(key);
    const pay = () =>
      trpc(
        'checkout.pay',
        { lines: [{ productId: 'book_sre', quantity: 1 }] },
        { cookie: `${operatorCookie}; ${dropCookie}`, 'idempotency-key': key },
      );
    await expect(pay()).rejects.toThrow(/fetch failed/);
    // The server committed: the payment of that key exists although nobody saw the answer.
    const sql = postgres(system.databaseUrl, { max: 1, onnotice: () => {} });
    const rows = await sql<
      { id: string }[]
    >`select id from payments where idempotency_key = ${key}`;
    await sql.end({ timeout: 1 });
    expect(rows).toHaveLength(1);
    // One shot: the browser's retry with the same key gets the stored answer.
    const retry = await pay();
    expect(retry.status).toBe(200);
    expect((retry.body.result!.data as { paymentId: string }).paymentId).toBe(rows[0]!.id);
    await settled(rows[0]!.id);
    expect(await ledgerCharges(rows[0]!.id), 'ledger charges').toBe(1);
  }, 60_000);

  it('every payment was charged exactly once (processor ledger vs app)', async () => {
    // Self-contained: it pays once itself, then checks every payment made so far (its own,
    // and any the tests before it made) against the ledger.
    await payAndSettle();
    const report = await verifyInvariant({
      databaseUrl: system.databaseUrl,
      processorDatabaseUrl: system.processorDatabaseUrl,
      converged: true,
      expectedCheckouts: keys.map((idempotencyKey) => ({ tenantId: 'tenant_a', idempotencyKey })),
    });
    expect(report.violations).toEqual([]);
    expect(report.payments).toBeGreaterThanOrEqual(keys.length);
    expect(report.ledgerCharges).toBe(report.payments);
  }, 60_000);
});
