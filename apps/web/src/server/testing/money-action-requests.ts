import { randomUUID } from 'node:crypto';
import type { WebTestServer } from './web-test-server.ts';

/**
 * A merchant's money requests against a web test server, as the money-action tests send them:
 * `post` under an idempotency key, a payment made and marked succeeded, and a refund of one
 * cent on each transport (its HTTP status and refund id, else its error code). Each is sent
 * with `auth`, or with the credential `who` a call names (a rotated key, an operator's cookie).
 */
export function moneyActionRequests(web: () => WebTestServer, auth: Record<string, string>) {
  const post = (path: string, key: string, body: unknown, who = auth) =>
    fetch(`${web().server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...who, 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  async function succeededPayment(): Promise<string> {
    const created = await post('/api/v1/payments', randomUUID(), {
      lines: [{ productId: 'book_sre', quantity: 1 }],
    });
    const { paymentId } = await created.json();
    await web().database.client.sql`
      update payments set status = 'succeeded', processor_payment_intent_id = 'pi_test'
      where id = ${paymentId}`;
    return paymentId;
  }

  const refundBy = {
    rest: async (paymentId: string, key: string, who = auth) => {
      const answer = await post(`/api/v1/payments/${paymentId}/refunds`, key, { amount: 1 }, who);
      const body = await answer.json();
      return { status: answer.status, seen: body.refundId ?? body.code };
    },
    graphql: async (paymentId: string, key: string, who = auth) => {
      const query =
        'mutation ($paymentId: ID!) { refundPayment(paymentId: $paymentId, amount: 1) { refundId } }';
      const answer = await post('/api/graphql', key, { query, variables: { paymentId } }, who);
      const body = await answer.json();
      return {
        status: answer.status,
        seen: body.data?.refundPayment?.refundId ?? body.errors?.[0]?.extensions?.code,
      };
    },
    trpc: async (paymentId: string, key: string, who = auth) => {
      const answer = await post('/api/trpc/ops.refundPayment', key, { paymentId, amount: 1 }, who);
      const body = await answer.json();
      return { status: answer.status, seen: body.result?.data?.refundId ?? body.error?.data?.code };
    },
  };

  return { post, succeededPayment, refundBy };
}
