import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { generateSecrets } from '@once/env';
import { findFreePort } from '@once/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoApiKeysForRun } from '../scripts/system/demo-api-keys.ts';
import { Supervisor } from '../scripts/system/supervisor.ts';
import { TEST_NEXT_DIST_DIR } from '../scripts/system/web-build.ts';

const webDir = fileURLToPath(new URL('../apps/web', import.meta.url));
const OPERATOR_CODE = 'limits-across-webs-code';
/** Session starts per address a minute: one more every 15 s, far longer than a burst takes. */
const STARTS_PER_ADDRESS = 4;
/** The operator-code throttle as deployed: attempts per record, new records per address. */
const ATTEMPTS_PER_RECORD = 5;
const NEW_RECORDS_PER_ADDRESS = 10;

const logLines: string[] = [];
let database: TestDatabase;
let supervisor: Supervisor;
let webs: string[] = [];

/**
 * The built web, started three times on one database, as a load balancer would spread a
 * client over them: whichever web each request reaches, in turn or all at once to one, the
 * session starts of an address and the operator-code attempts of a browser and of an address
 * add up to one allowance, not three. Each burst is fired at once, well inside the interval in
 * which an allowance earns one more (the window itself is tested with a clock in the API's
 * tests: a real web reads the real clock).
 */
describe('limits hold across three web processes', () => {
  beforeAll(async () => {
    database = await createTestDatabase('limits_across_webs');
    supervisor = new Supervisor((line) => logLines.push(line));
    const ports = await Promise.all([0, 1, 2].map(() => findFreePort()));
    // As the launcher starts a web: fresh secrets, one set for all three (SESSION_SECRET, the
    // answer key), and the run's demo API keys.
    const env = {
      ...process.env,
      ...generateSecrets(),
      ...demoApiKeysForRun({}),
      NODE_ENV: 'production',
      NEXT_TELEMETRY_DISABLED: '1',
      NO_COLOR: '1',
      HOST: '127.0.0.1',
      DATABASE_URL: database.url,
      ONCE_NEXT_DIST_DIR: TEST_NEXT_DIST_DIR,
      ONCE_OPERATOR_CODE: OPERATOR_CODE,
      // The test speaks for many clients: each request names its address, as a proxy would.
      ONCE_TRUST_PROXY: '1',
      ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE: String(STARTS_PER_ADDRESS),
      ONCE_SESSION_STARTS_PER_TENANT_PER_MINUTE: '0',
    };
    // All three at once, as a launcher starts them (migrations are advisory-locked, the seed upserts).
    await Promise.all(
      ports.map((port, i) =>
        supervisor.start({
          name: `web-${i + 1}`,
          command: process.execPath,
          args: ['--import', 'tsx', 'src/process/main.ts'],
          cwd: webDir,
          env: { ...env, PORT: String(port) },
          healthUrl: `http://127.0.0.1:${port}/api/health`,
          readyTimeoutMs: 45_000,
        }),
      ),
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${logLines.slice(-40).join('\n')}`);
    });
    webs = ports.map((port) => `http://127.0.0.1:${port}`);
  }, 60_000);
  afterAll(async () => {
    await supervisor?.stopAll();
    await database?.drop();
  });

  /** One `session.start` at web `i` from `address`; its status, stable code and cookies. */
  async function start(i: number, address: string, input: object, cookie?: string) {
    const response = await fetch(`${webs[i % webs.length]}/api/trpc/session.start`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': address,
        ...(cookie ? { cookie } : {}),
      },
      body: JSON.stringify(input),
    });
    const body = (await response.json()) as { error?: { data?: { code?: string } } };
    const cookies = response.headers.getSetCookie().map((line) => line.split(';')[0]!);
    return { status: response.status, code: body.error?.data?.code, cookies };
  }
  const wrongCode = (n: number) => ({
    demoTenantId: 'tenant_a',
    role: 'operator',
    operatorCode: `wrong-code-${n}`,
  });
  /** Fires `count` requests at once: to web `n % 3` in turn, or every one to `toOne`. */
  const burst = <T>(
    count: number,
    toOne: number | undefined,
    send: (web: number, n: number) => Promise<T>,
  ) => Promise.all(Array.from({ length: count }, (_, n) => send(toOne ?? n % 3, n)));
  const count = (answers: { code?: string | undefined; status: number }[], code: string) =>
    answers.filter((a) => (code === 'ok' ? a.status === 200 : a.code === code)).length;
  /**
   * `counted` is one allowance, plus what its sliding window earned back since `sinceMs` (one
   * per `intervalMs`; none while a burst is quicker than that, as it is): three webs counting
   * apart would admit three allowances.
   */
  const expectOneAllowance = (
    counted: number,
    allowance: number,
    sinceMs: number,
    intervalMs: number,
  ) => {
    expect(counted).toBeGreaterThanOrEqual(allowance);
    expect(counted).toBeLessThanOrEqual(
      allowance + Math.floor((Date.now() - sinceMs) / intervalMs),
    );
  };

  it.each([
    ['in turn', undefined, '198.51.100.1'],
    ['all at one web', 1, '198.51.100.2'],
  ])('session starts from one address, %s: one allowance', async (_, toOne, address) => {
    const since = Date.now();
    const answers = await burst(30, toOne, (web) =>
      start(web, address, { demoTenantId: 'tenant_a' }),
    );
    expectOneAllowance(
      count(answers, 'ok'),
      STARTS_PER_ADDRESS,
      since,
      60_000 / STARTS_PER_ADDRESS,
    );
    expect(count(answers, 'ok') + count(answers, 'session_rate_limited')).toBe(30);
  });

  it.each([
    ['in turn', undefined, '203.0.113.1'],
    ['all at one web', 2, '203.0.113.2'],
  ])('wrong operator codes from one browser, %s: one allowance', async (_, toOne, address) => {
    const first = await start(0, address, wrongCode(0));
    const record = first.cookies.find((c) => c.startsWith('once_signin='))!;
    expect(record).toBeDefined();
    const answers = await burst(30, toOne, (web, n) =>
      start(web, address, wrongCode(n + 1), record),
    );
    expect(count([first, ...answers], 'operator_code_invalid')).toBe(ATTEMPTS_PER_RECORD);
    expect(count(answers, 'session_rate_limited')).toBe(30 - (ATTEMPTS_PER_RECORD - 1));
  });

  it.each([
    ['in turn', undefined, '192.0.2.1'],
    ['all at one web', 0, '192.0.2.2'],
  ])(
    'cookieless wrong codes from one address, %s: one allowance; the presenter still signs in',
    async (_, toOne, address) => {
      // The presenter's browser signed in before the guessing began.
      const since = Date.now();
      const presenter = await start(2, address, { ...wrongCode(0), operatorCode: OPERATOR_CODE });
      expect(presenter.status).toBe(200);
      const record = presenter.cookies.find((c) => c.startsWith('once_signin='))!;
      const guesses = 3 * (NEW_RECORDS_PER_ADDRESS + ATTEMPTS_PER_RECORD);
      const answers = await burst(guesses, toOne, (web, n) => start(web, address, wrongCode(n)));
      // The address's new records left (one attempt each), then its shared record's attempts.
      const compared = count(answers, 'operator_code_invalid');
      expectOneAllowance(
        compared,
        NEW_RECORDS_PER_ADDRESS - 1 + ATTEMPTS_PER_RECORD,
        since,
        60_000 / NEW_RECORDS_PER_ADDRESS,
      );
      expect(compared + count(answers, 'session_rate_limited')).toBe(guesses);
      for (const web of [0, 1, 2]) {
        const again = await start(
          web,
          address,
          { ...wrongCode(0), operatorCode: OPERATOR_CODE },
          record,
        );
        expect(again.status).toBe(200);
      }
    },
  );
});
