import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE_NAME, signSessionValue } from './auth/session-cookie.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
  TEST_SESSION_SECRET,
} from './testing/api-test-harness.ts';
import { refusal } from './testing/refusal.ts';

describe('appRouter: tenants and sessions', () => {
  let h: ApiTestHarness;
  let paymentOfA: string;
  beforeAll(async () => {
    h = await createApiTestHarness('api_root');
    const { api } = h.caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() });
    paymentOfA = (await api.checkout.pay({ lines: [{ productId: 'book_ddia', quantity: 1 }] }))
      .paymentId;
  });
  afterAll(async () => {
    await h.drop();
  });

  it("tenant_b can neither read nor list tenant_a's payments, keys or jobs", async () => {
    const a = h.caller(bearer('tenant_a')).api;
    const b = h.caller(bearer('tenant_b')).api;
    expect((await a.checkout.status({ paymentId: paymentOfA })).status).toBe('processing');
    expect((await refusal(b.checkout.status({ paymentId: paymentOfA }))).code).toBe(
      'payment_not_found',
    );
    expect(await b.ops.payments()).toEqual([]);
    expect(await b.ops.outbox()).toEqual([]);
    expect(await b.ops.idempotencyKeys()).toEqual([]);
    expect((await a.ops.payments()).map((p) => p.paymentId)).toEqual([paymentOfA]);
    expect((await a.ops.outbox()).map((j) => j.paymentId)).toEqual([paymentOfA]);
    expect((await a.ops.idempotencyKeys()).map((k) => k.state)).toEqual(['completed']);
  });

  it('the same Idempotency-Key from two tenants makes two payments, one per tenant', async () => {
    const key = randomUUID();
    const pa = await h.caller({ ...bearer('tenant_a'), 'idempotency-key': key }).api.checkout.pay({
      lines: [{ productId: 'bookmark', quantity: 1 }],
    });
    const pb = await h.caller({ ...bearer('tenant_b'), 'idempotency-key': key }).api.checkout.pay({
      lines: [{ productId: 'mug', quantity: 1 }],
    });
    expect(pa.paymentId).not.toBe(pb.paymentId);
    expect(pb.amount).toBe(1500);
  });

  it('lists newest first and honours the limit', async () => {
    const a = h.caller(bearer('tenant_a')).api;
    const all = await a.ops.payments({ limit: 200 });
    const created = all.map((p) => p.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
    expect(await a.ops.payments({ limit: 1 })).toHaveLength(1);
  });

  it('catalogue.list shows only the caller’s products', async () => {
    const a = await h.caller(bearer('tenant_a')).api.catalogue.list();
    const b = await h.caller(bearer('tenant_b')).api.catalogue.list();
    expect(a.map((p) => p.productId).sort()).toEqual([
      'book_ddia',
      'book_pragprog',
      'book_sre',
      'bookmark',
    ]);
    expect(b.map((p) => p.productId)).not.toContain('book_ddia');
  });

  it('session.start sets a signed cookie that authenticates later requests', async () => {
    const start = h.caller();
    const session = await start.api.session.start({ demoTenantId: 'tenant_b' });
    expect(session).toEqual({ tenantId: 'tenant_b', tenantName: 'Globex Coffee', role: 'shopper' });
    const setCookie = start.resHeaders.get('set-cookie')!;
    expect(setCookie).toMatch(/^once_session=.+; Path=\/; HttpOnly; SameSite=Lax/);
    const cookie = setCookie.split(';')[0]!;
    expect(await h.caller({ cookie }).api.session.current()).toEqual(session);

    const viaApiKey = h.caller();
    await viaApiKey.api.session.start({ apiKey: 'once_test_tenant_a' });
    const cookieA = viaApiKey.resHeaders.get('set-cookie')!.split(';')[0]!;
    expect(await h.caller({ cookie: cookieA }).api.session.current()).toMatchObject({
      tenantId: 'tenant_a',
      role: 'operator',
    });
  });

  it('a tampered, foreign-secret or expired cookie is refused (and is no session)', async () => {
    const now = new Date();
    const good = signSessionValue('tenant_a', TEST_SESSION_SECRET, now);
    const forged = `${Buffer.from(JSON.stringify({ t: 'tenant_b', exp: 9e9 })).toString('base64url')}.${good.split('.')[1]}`;
    const foreign = signSessionValue('tenant_a', 'another-secret-0123456789', now);
    const expired = signSessionValue('tenant_a', TEST_SESSION_SECRET, new Date(0));
    for (const value of [forged, foreign, expired]) {
      const cookie = `${SESSION_COOKIE_NAME}=${encodeURIComponent(value)}`;
      expect((await refusal(h.caller({ cookie }).api.catalogue.list())).code).toBe(
        'invalid_credentials',
      );
      expect(await h.caller({ cookie }).api.session.current()).toBeNull();
    }
    expect((await refusal(h.caller().api.catalogue.list())).code).toBe('unauthenticated');
    expect(await h.caller().api.session.current()).toBeNull();
    expect((await refusal(h.caller().api.session.start({ apiKey: 'wrong' }))).code).toBe(
      'invalid_credentials',
    );
  });

  it('the tenant comes from the credential even when the body names another one', async () => {
    const { api } = h.caller({ ...bearer('tenant_b'), 'idempotency-key': randomUUID() });
    const result = await api.checkout.pay({
      lines: [{ productId: 'mug', quantity: 1 }],
      tenantId: 'tenant_a',
    } as never);
    const [row] = await h.database.client
      .sql`select tenant_id from payments where id = ${result.paymentId}`;
    expect(row?.tenant_id).toBe('tenant_b');
  });
});
