import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moneyActionRequests } from './testing/money-action-requests.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

// A money action whose database session is terminated while it runs (a failover, a pooler's
// restart) is answered 503 on every transport, and its retry right away runs or replays it:
// leased mode (GraphQL) must free its key as atomic mode (REST, tRPC) never holds one, not
// leave it held until its lease ends because its cleanup met the connection just cut.
describe('a money action whose database session is cut mid-request', () => {
  let web: WebTestServer;
  const auth = { authorization: 'Bearer once_test_tenant_a' };

  beforeAll(async () => {
    web = await startWebTestServer('web_money_action_cut', {
      SESSION_SECRET: 'money-action-cut-secret-0123456',
      ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
    });
  });
  afterAll(async () => {
    await web?.close();
  });
  const sql = () => web.database.client.sql;

  const { succeededPayment, refundBy } = moneyActionRequests(() => web, auth);

  /** Until a web session waits for a lock (read outside a transaction: it is a snapshot there). */
  async function waitForLockWaiter(): Promise<void> {
    for (let waited = 0; waited < 200; waited++) {
      const [found] = await sql()<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where application_name = 'once-web' and wait_event_type = 'Lock'`;
      if (found!.n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the request never waited for the lock');
  }

  /** Terminates the web's session once it waits for the payment's lock, which this test holds. */
  async function cutWhileWaiting(paymentId: string, request: () => Promise<unknown>) {
    let answer: Promise<unknown> | undefined;
    await sql().begin(async (tx) => {
      await tx`select id from payments where id = ${paymentId} for update`;
      answer = request();
      await waitForLockWaiter();
      await sql()`select pg_terminate_backend(pid) from pg_stat_activity
        where application_name = 'once-web' and wait_event_type = 'Lock'`;
    });
    return answer!;
  }

  it.each(['rest', 'graphql', 'trpc'] as const)(
    '%s: the client hangs up while it waits; its retry gets the one refund that ran',
    async (transport) => {
      const paymentId = await succeededPayment();
      const key = randomUUID();
      const hangUp = new AbortController();
      const path = {
        rest: `/api/v1/payments/${paymentId}/refunds`,
        graphql: '/api/graphql',
        trpc: '/api/trpc/ops.refundPayment',
      }[transport];
      const body = {
        rest: { amount: 1 },
        graphql: {
          query:
            'mutation ($paymentId: ID!) { refundPayment(paymentId: $paymentId, amount: 1) { refundId } }',
          variables: { paymentId },
        },
        trpc: { paymentId, amount: 1 },
      }[transport];
      await sql().begin(async (tx) => {
        await tx`select id from payments where id = ${paymentId} for update`;
        const sent = fetch(`${web.server.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth, 'idempotency-key': key },
          body: JSON.stringify(body),
          signal: hangUp.signal,
        }).catch(() => undefined);
        await waitForLockWaiter();
        hangUp.abort();
        await sent;
      });
      let retried = await refundBy[transport](paymentId, key);
      // Only while the first request is still finishing (a moment after the lock is free).
      for (let i = 0; i < 50 && retried.seen === 'idempotency_key_in_use'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        retried = await refundBy[transport](paymentId, key);
      }
      expect(retried.seen).toMatch(/^rf_/);
      const [refunds] = await sql()<{ n: number }[]>`
        select count(*)::int as n from refunds where payment_id = ${paymentId}`;
      expect(refunds?.n).toBe(1);
    },
  );

  it.each(['rest', 'graphql', 'trpc'] as const)(
    '%s: 503, and the retry right away refunds once',
    async (transport) => {
      const paymentId = await succeededPayment();
      const key = randomUUID();
      const refund = () => refundBy[transport](paymentId, key);
      expect(await cutWhileWaiting(paymentId, refund)).toMatchObject({
        status: 503,
        seen: 'idempotency_store_unavailable',
      });
      const retried = await refund();
      expect(retried.seen).toMatch(/^rf_/);
      expect(await refund()).toEqual(retried);
      const [refunds] = await sql()<{ n: number }[]>`
        select count(*)::int as n from refunds where payment_id = ${paymentId}`;
      expect(refunds?.n).toBe(1);
    },
  );
});
