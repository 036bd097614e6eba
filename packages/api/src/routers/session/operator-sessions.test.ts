import { demoTenantsWithApiKeys, seedDemoData } from '@once/db/seed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiTestHarness, createApiTestHarness } from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

const CODE = 'operator-sessions-test-code';
let now = Date.parse('2031-03-01T09:00:00Z');
const clock = { now: () => new Date(now) };

/** The `name=value` of the session cookie a call set (a shopper's or an operator's). */
function sessionCookieOf(resHeaders: Headers): string {
  const cookie = resHeaders.getSetCookie().find((line) => /^once_(operator_)?session=/.test(line));
  expect(cookie, 'a session cookie was set').toBeDefined();
  return cookie!.split(';')[0]!;
}

async function operatorByCode(h: ApiTestHarness, tenant = 'tenant_a') {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: tenant, role: 'operator', operatorCode: CODE });
  return sessionCookieOf(start.resHeaders);
}

async function operatorByKey(h: ApiTestHarness, apiKey: string) {
  const start = h.caller();
  await start.api.session.start({ apiKey });
  return sessionCookieOf(start.resHeaders);
}

const readsCockpit = async (h: ApiTestHarness, cookie: string) => {
  try {
    await h.caller({ cookie }).api.ops.payments({ limit: 1 });
    return true;
  } catch {
    return false;
  }
};

describe('operator sessions end on the server', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_operator_sessions', { operatorCode: CODE, clock });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('sign-out ends the session: a copy of its cookie is refused from then on', async () => {
    const cookie = await operatorByCode(h);
    const other = await operatorByCode(h);
    expect(await readsCockpit(h, cookie)).toBe(true);
    const end = h.caller({ cookie });
    await end.api.session.end();
    expect(end.resHeaders.get('set-cookie')).toMatch(/^once_operator_session=;.*Max-Age=0/);
    expect(await refusal(h.caller({ cookie }).api.ops.payments({ limit: 1 }))).toEqual({
      trpc: 'UNAUTHORIZED',
      code: 'invalid_credentials',
    });
    expect(await h.caller({ cookie }).api.session.current()).toBeNull();
    // Another session of the same operator is not touched.
    expect(await readsCockpit(h, other)).toBe(true);
  });

  it('rotating an API key ends at once the sessions that key opened, and only those', async () => {
    const byOldKey = await operatorByKey(h, 'once_test_tenant_a');
    const byCode = await operatorByCode(h);
    const otherTenant = await operatorByKey(h, 'once_test_tenant_b');
    expect(await readsCockpit(h, byOldKey)).toBe(true);
    // What a re-seed with a new key does (a deployment's rotation: new .env, restart).
    await seedDemoData(
      h.database.client.db,
      demoTenantsWithApiKeys({ tenant_a: 'rotated-key-a-0001' }),
    );
    expect(await readsCockpit(h, byOldKey)).toBe(false);
    expect(await readsCockpit(h, byCode)).toBe(true);
    expect(await readsCockpit(h, otherTenant)).toBe(true);
    expect(await readsCockpit(h, await operatorByKey(h, 'rotated-key-a-0001'))).toBe(true);
    // Rotating back does not bring the ended sessions back.
    await seedDemoData(h.database.client.db);
    expect(await readsCockpit(h, byOldKey)).toBe(false);
  });

  it('an operator session lasts 8 hours, its cookie too; a shopper session is not shortened', async () => {
    const start = h.caller();
    await start.api.session.start({
      demoTenantId: 'tenant_a',
      role: 'operator',
      operatorCode: CODE,
    });
    const line = start.resHeaders
      .getSetCookie()
      .find((l) => l.startsWith('once_operator_session='))!;
    expect(line).toMatch(/Max-Age=28800(;|$)/);
    const cookie = line.split(';')[0]!;
    const shopper = h.caller();
    await shopper.api.session.start({ demoTenantId: 'tenant_a' });
    const shopperCookie = sessionCookieOf(shopper.resHeaders);
    const startedAt = now;
    now = startedAt + 8 * 3600_000 - 1000;
    expect(await readsCockpit(h, cookie)).toBe(true);
    now = startedAt + 8 * 3600_000;
    expect(await readsCockpit(h, cookie)).toBe(false);
    expect(await h.caller({ cookie: shopperCookie }).api.session.current()).toMatchObject({
      role: 'shopper',
    });
    now = startedAt;
  });

  it('a shopper signing in on the checkout of the same browser leaves the cockpit its operator session', async () => {
    const operator = await operatorByCode(h);
    expect(operator).toMatch(/^once_operator_session=/);
    const checkout = h.caller({ cookie: operator });
    await checkout.api.session.start({ demoTenantId: 'tenant_b' });
    const shopper = sessionCookieOf(checkout.resHeaders);
    expect(shopper).toMatch(/^once_session=/);
    // The browser now holds both cookies: each page is answered by its own session.
    const both = `${operator}; ${shopper}`;
    expect(
      await h.caller({ cookie: both, 'x-once-session': 'operator' }).api.session.current(),
    ).toMatchObject({ tenantId: 'tenant_a', role: 'operator' });
    expect(await h.caller({ cookie: both }).api.session.current()).toMatchObject({
      tenantId: 'tenant_b',
      role: 'shopper',
    });
    // The checkout's sign-out ends the shopper's session only.
    const end = h.caller({ cookie: both });
    await end.api.session.end();
    expect(end.resHeaders.getSetCookie()).toEqual([
      expect.stringMatching(/^once_session=;.*Max-Age=0/),
    ]);
    expect(await readsCockpit(h, operator)).toBe(true);
    // With no shopper session, the checkout is answered by the operator's (an operator may pay).
    expect(await h.caller({ cookie: operator }).api.session.current()).toMatchObject({
      role: 'operator',
    });
  });
});
