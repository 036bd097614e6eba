import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ADDRESS_HEADER } from '../../auth/client-address.ts';
import { SessionStartLimiter } from '../../auth/session-start-limit.ts';
import { type ApiTestHarness, createApiTestHarness } from '../../testing/api-test-harness.ts';
import { detailedRefusal } from '../../testing/refusal.ts';

const CODE = 'k7pq-4mzt-9xwa';

/** The session cookie a call set, if any (a refused one may still name the browser's record). */
const sessionCookieOf = (resHeaders: Headers) =>
  resHeaders
    .getSetCookie()
    .find((line) => /^once_(operator_)?session=/.test(line))
    ?.split(';')[0];

describe('session.start: a demo operator needs the operator code', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_session_operator_code', { operatorCode: CODE });
  });
  afterAll(async () => {
    await h.drop();
  });

  it.each([
    ['no code', undefined],
    ['a wrong code', 'k7pq-4mzt-9xwb'],
    ['a prefix of the code', 'k7pq-4mzt'],
    ['an empty code', ''],
  ])(
    'refuses %s with operator_code_invalid and sets no session cookie',
    async (_, operatorCode) => {
      const start = h.caller();
      expect(
        await detailedRefusal(
          start.api.session.start({ demoTenantId: 'tenant_a', role: 'operator', operatorCode }),
        ),
      ).toMatchObject({ trpc: 'UNAUTHORIZED', code: 'operator_code_invalid' });
      expect(sessionCookieOf(start.resHeaders)).toBeUndefined();
    },
  );

  it('accepts the code (whitespace around or inside ignored) and signs in an operator', async () => {
    for (const operatorCode of [CODE, ` ${CODE.replaceAll('-', ' - ')} `]) {
      const start = h.caller();
      expect(
        await start.api.session.start({ demoTenantId: 'tenant_a', role: 'operator', operatorCode }),
      ).toMatchObject({ tenantId: 'tenant_a', role: 'operator' });
      const cookie = sessionCookieOf(start.resHeaders)!;
      expect(await h.caller({ cookie }).api.ops.payments({ limit: 1 })).toBeDefined();
    }
  });

  it('a shopper needs no code; the API key still signs in an operator', async () => {
    expect(await h.caller().api.session.start({ demoTenantId: 'tenant_a' })).toMatchObject({
      role: 'shopper',
    });
    expect(await h.caller().api.session.start({ apiKey: 'once_test_tenant_a' })).toMatchObject({
      role: 'operator',
    });
  });
});

describe('session.start without an operator code configured', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_session_no_operator_code');
  });
  afterAll(async () => {
    await h.drop();
  });

  it('refuses every demo operator sign-in, whatever code is sent; shoppers and API keys pass', async () => {
    for (const operatorCode of [undefined, '', 'anything-at-all']) {
      const start = h.caller();
      expect(
        await detailedRefusal(
          start.api.session.start({ demoTenantId: 'tenant_a', role: 'operator', operatorCode }),
        ),
      ).toMatchObject({ trpc: 'FORBIDDEN', code: 'demo_operator_login_disabled' });
      expect(start.resHeaders.get('set-cookie')).toBeNull();
    }
    expect(await h.caller().api.session.start({ demoTenantId: 'tenant_b' })).toMatchObject({
      role: 'shopper',
    });
    expect(await h.caller().api.session.start({ apiKey: 'once_test_tenant_b' })).toMatchObject({
      role: 'operator',
    });
  });
});

describe('session.start is limited per client address and per tenant', () => {
  let h: ApiTestHarness;
  const from = (address: string) => h.caller({ [CLIENT_ADDRESS_HEADER]: address });
  beforeAll(async () => {
    h = await createApiTestHarness('api_session_start_limit', {
      operatorCode: CODE,
      sessionStartLimits: { perAddress: 3, perTenant: 5 },
    });
    await h.clock.set(Date.parse('2030-01-01T00:00:10Z'));
  });
  afterAll(async () => {
    await h.drop();
  });

  it('an address over its allowance is refused 429 with Retry-After and no cookie; failed attempts count; others go on', async () => {
    const address = '203.0.113.7';
    // A wrong API key is an attempt too: guessing is as slow as minting sessions.
    expect(
      await detailedRefusal(from(address).api.session.start({ apiKey: 'guess-guess-1' })),
    ).toMatchObject({ code: 'invalid_credentials' });
    await from(address).api.session.start({ demoTenantId: 'tenant_a' });
    await from(address).api.session.start({ demoTenantId: 'tenant_a' });
    const refused = from(address);
    expect(
      await detailedRefusal(refused.api.session.start({ demoTenantId: 'tenant_a' })),
    ).toMatchObject({
      trpc: 'TOO_MANY_REQUESTS',
      code: 'session_rate_limited',
      details: { limit: 'address', retryAfterSeconds: 20 },
    });
    expect(refused.resHeaders.get('retry-after')).toBe('20');
    expect(refused.resHeaders.get('set-cookie')).toBeNull();
    // Even the right key is refused now: the allowance, not the credential, decides first.
    expect(
      await detailedRefusal(from(address).api.session.start({ apiKey: 'once_test_tenant_a' })),
    ).toMatchObject({ code: 'session_rate_limited' });
    // The operator code is not counted here but per browser (operator-code-guessing.test.ts):
    // every demo client shares 127.0.0.1, and the presenter must not be locked out by it.
    expect(
      await from(address).api.session.start({
        demoTenantId: 'tenant_a',
        role: 'operator',
        operatorCode: CODE,
      }),
    ).toMatchObject({ role: 'operator' });
    // Another address is not affected; once an interval (window / allowance) has passed, one
    // more fits, and only one.
    expect(
      await from('198.51.100.1').api.session.start({ demoTenantId: 'tenant_a' }),
    ).toBeDefined();
    await h.clock.pass(20_000);
    expect(await from(address).api.session.start({ demoTenantId: 'tenant_a' })).toBeDefined();
    expect(
      await detailedRefusal(from(address).api.session.start({ demoTenantId: 'tenant_a' })),
    ).toMatchObject({ code: 'session_rate_limited' });
  });

  it('every web process counts against one allowance, and no minute boundary doubles it', async () => {
    // Two processes' limiters over the one database, the minute about to turn.
    const web1 = new SessionStartLimiter(h.database.client.db, { perAddress: 3, perTenant: 0 });
    const web2 = new SessionStartLimiter(h.database.client.db, { perAddress: 3, perTenant: 0 });
    const address = '203.0.113.99';
    await h.clock.set(Date.parse('2030-01-01T00:04:59.900Z'));
    expect(await web1.admitAttempt(address)).toBeUndefined();
    expect(await web2.admitAttempt(address)).toBeUndefined();
    expect(await web1.admitAttempt(address)).toBeUndefined();
    expect(await web2.admitAttempt(address)).toMatchObject({ limit: 'address' });
    // A tenth of a second later, in the next wall-clock minute: fixed windows admitted three more.
    await h.clock.pass(100);
    expect(await web1.admitAttempt(address)).toMatchObject({ limit: 'address' });
    expect(await web2.admitAttempt(address)).toMatchObject({ limit: 'address' });
  });

  it('one IPv6 /64 is one address; an IPv4-mapped address is its IPv4', async () => {
    await h.clock.set(Date.parse('2030-01-01T00:06:00Z'));
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002::7']) {
      await from(address).api.session.start({ demoTenantId: 'tenant_b' });
    }
    expect(
      await detailedRefusal(
        from('2001:db8:1:2:aaaa::1').api.session.start({ demoTenantId: 'tenant_b' }),
      ),
    ).toMatchObject({ code: 'session_rate_limited' });
    for (let i = 0; i < 3; i++) {
      await from('192.0.2.9').api.session.start({ demoTenantId: 'tenant_a' });
    }
    expect(
      await detailedRefusal(
        from('::ffff:192.0.2.9').api.session.start({ demoTenantId: 'tenant_a' }),
      ),
    ).toMatchObject({ code: 'session_rate_limited' });
  });

  it('a tenant over its ceiling is refused whatever the address; the other tenant is not', async () => {
    await h.clock.set(Date.parse('2030-01-01T00:10:00Z'));
    for (let i = 0; i < 5; i++) {
      await from(`192.0.2.${100 + i}`).api.session.start({ demoTenantId: 'tenant_a' });
    }
    const refused = from('192.0.2.200');
    expect(
      await detailedRefusal(refused.api.session.start({ apiKey: 'once_test_tenant_a' })),
    ).toMatchObject({ code: 'session_rate_limited', details: { limit: 'tenant' } });
    expect(refused.resHeaders.get('set-cookie')).toBeNull();
    expect(await from('192.0.2.201').api.session.start({ demoTenantId: 'tenant_b' })).toBeDefined();
  });
});
