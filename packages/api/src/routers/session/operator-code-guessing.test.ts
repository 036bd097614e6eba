import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ADDRESS_HEADER } from '../../auth/client-address.ts';
import { type ApiTestHarness, createApiTestHarness } from '../../testing/api-test-harness.ts';
import { detailedRefusal } from '../../testing/refusal.ts';

const CODE = 'guessing-test-operator-code';
const LOOPBACK = '127.0.0.1';

/**
 * Every demo client is 127.0.0.1: the presenter's browser and a guesser on the same machine
 * share one address. The limits are the deployed ones (60 sign-ins a minute per address).
 */
describe('guessing the operator code is slow for the guesser, not for the presenter', () => {
  let h: ApiTestHarness;
  let now = Date.parse('2031-04-01T10:00:00Z');
  beforeAll(async () => {
    h = await createApiTestHarness('api_operator_code_guessing', {
      operatorCode: CODE,
      clock: { now: () => new Date(now) },
      sessionStartLimits: { perAddress: 60, perTenant: 600 },
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  /** One sign-in attempt from 127.0.0.1 with this browser's cookies; the cookies it was given. */
  async function attempt(operatorCode: string, cookies: string[] = []) {
    const call = h.caller({
      [CLIENT_ADDRESS_HEADER]: LOOPBACK,
      ...(cookies.length ? { cookie: cookies.join('; ') } : {}),
    });
    const given = () => call.resHeaders.getSetCookie().map((line) => line.split(';')[0]!);
    try {
      await call.api.session.start({ demoTenantId: 'tenant_a', role: 'operator', operatorCode });
      return { ok: true as const, given: given() };
    } catch (error) {
      const refused = await detailedRefusal(Promise.reject(error));
      return { ok: false as const, refused, given: given() };
    }
  }
  const browserCookie = (given: string[]) => given.find((c) => c.startsWith('once_signin='));

  it('a browser of its own keeps the presenter in while others guess from the same address', async () => {
    // The presenter signs in once: the browser gets its own sign-in identity.
    const first = await attempt(CODE);
    expect(first.ok).toBe(true);
    const presenter = [browserCookie(first.given)!];
    expect(presenter[0]).toMatch(/^once_signin=[\w-]{20,}$/);

    // A guesser that drops its cookies: 300 wrong codes within the minute.
    let checked = 0;
    for (let i = 0; i < 300; i++) {
      const guess = await attempt(`wrong-guess-${i}`);
      expect(guess.ok).toBe(false);
      if (!guess.ok && guess.refused.code === 'operator_code_invalid') checked += 1;
      else if (!guess.ok) expect(guess.refused.code).toBe('session_rate_limited');
    }
    // Only a handful of those guesses were even compared with the code.
    expect(checked).toBeLessThanOrEqual(20);

    // A guesser that keeps its cookie: five free tries, then each failure doubles its wait.
    const kept = await attempt('wrong-kept-0');
    const guesser = kept.given.filter((c) => c.startsWith('once_signin='));
    const guesserCookies = guesser.length ? guesser : [];
    for (let i = 1; i < 6 && guesserCookies.length; i++) {
      expect((await attempt(`wrong-kept-${i}`, guesserCookies)).ok).toBe(false);
    }

    // The presenter types the right code: in at once, as often as needed.
    for (let i = 0; i < 3; i++) {
      const again = await attempt(` ${CODE} `, presenter);
      expect(again.ok, JSON.stringify(again)).toBe(true);
    }
    now += 1000;
  });

  it("a browser's own wrong codes slow it down exponentially; the right code resets it", async () => {
    now = Date.parse('2031-04-01T11:00:00Z');
    const first = await attempt('typo-0');
    expect(first.ok).toBe(false);
    const me = [browserCookie(first.given)!];
    for (let i = 1; i < 5; i++) {
      const typo = await attempt(`typo-${i}`, me);
      expect(!typo.ok && typo.refused.code).toBe('operator_code_invalid');
    }
    // The sixth failure is still answered, and from then on each one doubles the wait.
    const sixth = await attempt('typo-5', me);
    expect(!sixth.ok && sixth.refused.code).toBe('operator_code_invalid');
    const waiting = await attempt(CODE, me);
    expect(!waiting.ok && waiting.refused).toMatchObject({
      code: 'session_rate_limited',
      details: { limit: 'browser', retryAfterSeconds: 1 },
    });
    now += 1000;
    expect((await attempt('typo-6', me)).ok).toBe(false);
    const longer = await attempt(CODE, me);
    expect(!longer.ok && longer.refused.details).toMatchObject({ retryAfterSeconds: 2 });
    now += 2000;
    expect((await attempt(CODE, me)).ok).toBe(true);
    // Reset: five free tries again.
    for (let i = 0; i < 5; i++) {
      const typo = await attempt(`typo-again-${i}`, me);
      expect(!typo.ok && typo.refused.code).toBe('operator_code_invalid');
    }
  });
});
