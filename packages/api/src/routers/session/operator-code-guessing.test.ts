import { createDatabaseClient } from '@once/db';
import { findFreePort } from '@once/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ADDRESS_HEADER } from '../../auth/client-address.ts';
import { OperatorCodeThrottle } from '../../auth/operator-code-throttle.ts';
import { SessionStartLimiter } from '../../auth/session-start-limit.ts';
import { createContext } from '../../context.ts';
import type { ApiDependencies } from '../../dependencies.ts';
import { createCaller } from '../../root.ts';
import {
  type ApiTestHarness,
  createApiTestHarness,
  TEST_SESSION_SECRET,
} from '../../testing/api-test-harness.ts';
import { detailedRefusal } from '../../testing/refusal.ts';

const CODE = 'guessing-test-operator-code';
const LOOPBACK = '127.0.0.1';

/**
 * Every demo client is 127.0.0.1: the presenter's browser and a guesser on the same machine
 * share one address. The limits are the deployed ones (60 sign-ins a minute per address;
 * 5 operator-code attempts per record in any 15 minutes; 10 new records per address a minute).
 */
describe('guessing the operator code is slow for the guesser, not for the presenter', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_operator_code_guessing', {
      operatorCode: CODE,
      sessionStartLimits: { perAddress: 60, perTenant: 600 },
    });
    await h.clock.set(Date.parse('2031-04-01T10:00:00Z'));
  });
  afterAll(async () => {
    await h.drop();
  });

  /** A web process of its own over the same database (its own throttle and limiter). */
  const anotherWeb = (): ApiDependencies => ({
    ...h.deps,
    operatorCodeThrottle: new OperatorCodeThrottle(h.database.client.db, TEST_SESSION_SECRET),
    sessionStartLimiter: new SessionStartLimiter(h.database.client.db, {
      perAddress: 60,
      perTenant: 600,
    }),
  });

  /** One sign-in attempt from 127.0.0.1 with this browser's cookies; the cookies it was given. */
  async function attempt(operatorCode: string, cookies: string[] = [], deps = h.deps) {
    const resHeaders = new Headers();
    const req = new Request('http://localhost/api/trpc', {
      headers: {
        [CLIENT_ADDRESS_HEADER]: LOOPBACK,
        ...(cookies.length ? { cookie: cookies.join('; ') } : {}),
      },
    });
    const api = createCaller(createContext({ req, resHeaders, ...deps }));
    const given = () => resHeaders.getSetCookie().map((line) => line.split(';')[0]!);
    try {
      await api.session.start({ demoTenantId: 'tenant_a', role: 'operator', operatorCode });
      return { ok: true as const, given: given() };
    } catch (error) {
      const refused = await detailedRefusal(Promise.reject(error));
      return {
        ok: false as const,
        refused,
        given: given(),
        retryAfter: resHeaders.get('retry-after'),
      };
    }
  }
  const browserCookie = (given: string[]) => given.find((c) => c.startsWith('once_signin='));
  const compared = (results: Awaited<ReturnType<typeof attempt>>[]) =>
    results.filter((r) => !r.ok && r.refused.code === 'operator_code_invalid').length;

  it('a browser of its own keeps the presenter in while others guess from the same address', async () => {
    // The presenter signs in once: the browser gets its own signed sign-in record.
    const first = await attempt(CODE);
    expect(first.ok).toBe(true);
    const presenter = [browserCookie(first.given)!];
    expect(presenter[0]).toMatch(/^once_signin=[\w-]{20,}\.\d+\.[\w-]{40,}$/);

    // A guesser that drops its cookies: 300 wrong codes within the minute.
    const guesses = [];
    const guessing = performance.now();
    for (let i = 0; i < 300; i++) guesses.push(await attempt(`wrong-guess-${i}`));
    const guessedMs = performance.now() - guessing;
    expect(guesses.every((g) => g.ok === false)).toBe(true);
    for (const g of guesses) {
      if (!g.ok && g.refused.code !== 'operator_code_invalid') {
        expect(g.refused).toMatchObject({
          code: 'session_rate_limited',
          details: { limit: 'address' },
        });
      }
    }
    // 9 new records left this minute (the presenter took one), one attempt each, then the
    // address's shared record's 5: nothing else was even compared with the code. The
    // allowances slide on the database's real clock: a slow machine earns one more new record
    // per 6 s the 300 guesses took, and the shared record one more attempt per 3 minutes.
    const earned = Math.floor(guessedMs / 6_000) + Math.floor(guessedMs / 180_000);
    expect(compared(guesses)).toBeGreaterThanOrEqual(9 + 5);
    expect(compared(guesses)).toBeLessThanOrEqual(9 + 5 + earned);

    // A forged record (right shape, wrong signature) is no record: it shares the address's.
    const forged = await attempt('wrong-forged', [
      `once_signin=${'a'.repeat(24)}.${'b'.repeat(43)}`,
    ]);
    expect(!forged.ok && forged.refused.details).toMatchObject({ limit: 'address' });

    // The presenter types the right code: in at once, as often as needed.
    for (let i = 0; i < 8; i++) {
      const again = await attempt(` ${CODE} `, presenter);
      expect(again.ok, JSON.stringify(again)).toBe(true);
    }
  });

  it("a browser's 5 attempts slide over 15 minutes, with no boundary to double them", async () => {
    // A second before a quarter hour turns: a fixed window would start afresh in a second.
    await h.clock.set(Date.parse('2031-04-01T11:14:59Z'));
    const first = await attempt('typo-0');
    const me = [browserCookie(first.given)!];
    const typos = [first];
    for (let i = 1; i < 5; i++) typos.push(await attempt(`typo-${i}`, me));
    expect(compared(typos)).toBe(5);
    const waiting = await attempt(CODE, me);
    expect(!waiting.ok && waiting.refused).toMatchObject({
      code: 'session_rate_limited',
      details: { limit: 'browser', retryAfterSeconds: 180 },
    });
    expect(!waiting.ok && waiting.retryAfter).toBe('180');
    await h.clock.pass(1000);
    expect(await attempt(CODE, me)).toMatchObject({
      ok: false,
      refused: { code: 'session_rate_limited' },
    });
    // One attempt every 3 minutes from then on, wrong or right.
    await h.clock.pass(179_000);
    expect(compared([await attempt('typo-5', me)])).toBe(1);
    expect((await attempt(CODE, me)).ok).toBe(false);
    await h.clock.pass(180_000);
    expect((await attempt(CODE, me)).ok).toBe(true);
    // The right code gave the record its whole allowance back.
    const again = [];
    for (let i = 0; i < 6; i++) again.push(await attempt(`typo-again-${i}`, me));
    expect(compared(again)).toBe(5);
  });

  it('three webs at once count against one allowance per browser and per address', async () => {
    await h.clock.set(Date.parse('2031-04-01T12:00:00Z'));
    const webs = [h.deps, anotherWeb(), anotherWeb()];
    // One browser's record, given by the first web, is known to the others.
    const first = await attempt('wrong-spread-0', [], webs[0]);
    const browser = [browserCookie(first.given)!];
    const spread = await Promise.all(
      Array.from({ length: 30 }, (_, i) => attempt(`wrong-spread-${i + 1}`, browser, webs[i % 3])),
    );
    expect(compared([first, ...spread])).toBe(5);
    // Cookieless, all at once: 10 new records a minute for the address, then its one shared record.
    await h.clock.pass(60_000);
    const cookieless = await Promise.all(
      Array.from({ length: 60 }, (_, i) => attempt(`wrong-burst-${i}`, [], webs[i % 3])),
    );
    expect(compared(cookieless)).toBe(10 + 5);
  });

  it('a database that cannot be reached refuses every sign-in (fails closed), right code or not', async () => {
    await h.clock.set(Date.parse('2031-04-01T13:00:00Z'));
    const down = createDatabaseClient(`postgres://once@127.0.0.1:${await findFreePort()}/once`, {
      applicationName: 'a web whose database is down',
    });
    try {
      // Only the throttle's database is away: a throttle that let attempts through would sign in.
      const web = {
        ...h.deps,
        operatorCodeThrottle: new OperatorCodeThrottle(down.db, TEST_SESSION_SECRET),
      };
      const presenter = [browserCookie((await attempt(CODE)).given)!];
      for (const code of [CODE, 'wrong-while-down']) {
        const refused = await attempt(code, presenter, web);
        expect(refused).toMatchObject({
          ok: false,
          refused: { code: 'idempotency_store_unavailable' },
        });
        expect(refused.given).toEqual([]);
      }
      // The session starts' limiter likewise: a shopper is not let in uncounted either.
      const limiterDown = {
        ...h.deps,
        sessionStartLimiter: new SessionStartLimiter(down.db, { perAddress: 60, perTenant: 600 }),
      };
      const resHeaders = new Headers();
      const req = new Request('http://localhost/api/trpc');
      const api = createCaller(createContext({ req, resHeaders, ...limiterDown }));
      expect(await detailedRefusal(api.session.start({ demoTenantId: 'tenant_a' }))).toMatchObject({
        code: 'idempotency_store_unavailable',
      });
      expect(resHeaders.getSetCookie()).toEqual([]);
      expect(resHeaders.get('retry-after')).not.toBeNull();
    } finally {
      await down.close();
    }
  });

  it('a record that never gave the right code lapses with its window; a proven one lasts', async () => {
    await h.clock.set(Date.parse('2031-04-01T14:00:00Z'));
    const unproven = [browserCookie((await attempt('typo-lapse-0')).given)!];
    const proven = [browserCookie((await attempt(CODE)).given)!];
    await h.clock.pass(15 * 60_000 + 1000);
    // A guesser keeping every record it is given holds only the last 15 minutes' worth.
    const lapsed = await attempt('typo-lapse-1', unproven);
    expect(browserCookie(lapsed.given)).toMatch(/^once_signin=/);
    expect(browserCookie(lapsed.given)).not.toBe(unproven[0]);
    await h.clock.pass(20 * 24 * 60 * 60_000);
    const typo = await attempt('typo-lapse-2', proven);
    expect(!typo.ok && typo.refused.code).toBe('operator_code_invalid');
    expect(typo.given).toEqual([]);
    expect((await attempt(CODE, proven)).ok).toBe(true);
  });
});
