import { randomUUID } from 'node:crypto';
import { demoTenantsWithApiKeys, seedDemoData } from '@once/db/seed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moneyActionRequests } from './testing/money-action-requests.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

// An Idempotency-Key is the merchant's, not the credential's: a money action retried after the
// merchant rotated its API key (or its operator signed in again) is answered as the first one
// was, while another merchant's key never sees it and the replaced key opens nothing.
describe('a money action retried across a credential change', () => {
  let web: WebTestServer;
  const OPERATOR_CODE = 'key-rotation-operator-code-0123';
  let apiKey = 'once_test_tenant_a';

  beforeAll(async () => {
    web = await startWebTestServer('web_money_key_rotation', {
      SESSION_SECRET: 'money-key-rotation-secret-012345',
      ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
      ONCE_OPERATOR_CODE: OPERATOR_CODE,
    });
  });
  afterAll(async () => {
    await web?.close();
  });

  const post = (path: string, headers: Record<string, string>, body: unknown) =>
    fetch(`${web.server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  async function succeededPayment(merchantKey = apiKey, productId = 'book_sre'): Promise<string> {
    const created = await post(
      '/api/v1/payments',
      { ...bearer(merchantKey), 'idempotency-key': randomUUID() },
      { lines: [{ productId, quantity: 1 }] },
    );
    expect(created.status).toBe(201);
    const { paymentId } = await created.json();
    await web.database.client.sql`
      update payments set status = 'succeeded', processor_payment_intent_id = 'pi_test'
      where id = ${paymentId}`;
    return paymentId;
  }

  async function rotate(): Promise<string> {
    const old = apiKey;
    apiKey = `once_rotated_${randomUUID()}`;
    await seedDemoData(web.runtime.client.db, demoTenantsWithApiKeys({ tenant_a: apiKey }));
    return old;
  }

  /** A refund of one cent under `key` by each transport, sent with the credential `who`. */
  const { refundBy } = moneyActionRequests(() => web, {});

  it.each(['rest', 'graphql', 'trpc'] as const)(
    '%s: the new key replays it, the old key is 401, another merchant is refused',
    async (transport) => {
      const send = refundBy[transport];
      const paymentId = await succeededPayment();
      const key = randomUUID();
      const first = await send(paymentId, key, bearer(apiKey));
      expect(first.seen).toMatch(/^rf_/);
      const old = await rotate();
      expect(await send(paymentId, key, bearer(apiKey))).toEqual(first);
      expect(await send(paymentId, key, bearer(old))).toMatchObject({
        status: 401,
        seen: 'invalid_credentials',
      });
      expect(await send(paymentId, key, bearer('once_test_tenant_b'))).toMatchObject({
        status: 404,
        seen: 'payment_not_found',
      });
      const [refunds] = await web.database.client.sql<{ n: number }[]>`
        select count(*)::int as n from refunds where payment_id = ${paymentId}`;
      expect(refunds?.n).toBe(1);
      // The same key is the other merchant's own to use: its own refund, not a's answer.
      const theirs = await succeededPayment('once_test_tenant_b', 'mug');
      const own = await send(theirs, key, bearer('once_test_tenant_b'));
      expect(own.seen).toMatch(/^rf_/);
      expect(own.seen).not.toBe(first.seen);
    },
  );

  it('the cockpit: an operator signed in again replays its refund under the same key', async () => {
    const signIn = async () => {
      const answer = await post(
        '/api/trpc/session.start',
        {},
        { demoTenantId: 'tenant_a', role: 'operator', operatorCode: OPERATOR_CODE },
      );
      expect(answer.status).toBe(200);
      const line = answer.headers
        .getSetCookie()
        .find((l) => l.startsWith('once_operator_session='));
      return { cookie: line!.split(';')[0]!, 'x-once-session': 'operator' };
    };
    const paymentId = await succeededPayment();
    const key = randomUUID();
    const first = await refundBy.trpc(paymentId, key, await signIn());
    expect(first.status).toBe(200);
    expect(await refundBy.trpc(paymentId, key, await signIn())).toEqual(first);
    // The merchant's API key on the same transport is the same merchant: the same refund.
    expect(await refundBy.trpc(paymentId, key, bearer(apiKey))).toEqual(first);
  });
});
