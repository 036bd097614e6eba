import { expect, test } from '@playwright/test';
import { readPaymentState, restPay, trpcPay } from '../chaos/clients/pay-transport.ts';

/**
 * The chaos clients' requests end at their timeout whatever the response body does. Node's
 * fetch can leave a body read pending for ever after its request is aborted
 * (nodejs/node#56917); a soak run had 11 clients hang that way. Here `fetch` answers with a
 * body that never ends and ignores the abort, the worst case of that bug. No system runs.
 */
const stalledBody = () =>
  new Response(
    new ReadableStream({
      pull: () => new Promise<void>(() => {}),
    }),
    { status: 200, headers: { 'content-type': 'application/json' } },
  );

const realFetch = globalThis.fetch;
test.beforeEach(() => {
  globalThis.fetch = async () => stalledBody();
});
test.afterEach(() => {
  globalThis.fetch = realFetch;
});

const request = {
  webUrl: 'http://127.0.0.1:9',
  apiKey: 'once_test_tenant_a',
  key: 'k1',
  body: { lines: [{ productId: 'book_sre', quantity: 1 }] },
  timeoutMs: 200,
};

test('a pay request whose body never ends is recorded as info at its timeout (REST and tRPC)', async () => {
  test.setTimeout(5_000);
  for (const transport of [restPay, trpcPay]) {
    const answer = await transport(request);
    expect(answer).toMatchObject({ type: 'info', error: 'client_timeout' });
  }
});

test('a status read whose body never ends gives up at its timeout', async () => {
  test.setTimeout(5_000);
  const answer = await readPaymentState('http://127.0.0.1:9', 'once_test_tenant_a', 'pay_1', 200);
  expect(answer.status).toBe(0);
  expect(answer.error).toBeDefined();
});
