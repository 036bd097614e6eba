import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from './support/test-system.ts';

/**
 * The merchant's REST capture, cancel and refunds against the whole system: the web's routes,
 * a real worker process and the real processor. A double submit (one key) and a double click
 * (two keys) move money once, and what the API answers agrees with the processor's ledger.
 */
let system: TestSystem;

beforeAll(async () => {
  system = await startTestSystem({ label: 'rest_money', webhookSecret: 'whsec_test_rest_money' });
  await system.startWorker('rest-money-worker');
}, 120_000);

afterAll(async () => {
  await system?.close();
});

const auth = { authorization: 'Bearer once_test_tenant_a' };

function post(path: string, key: string, body?: unknown): Promise<Response> {
  return fetch(`${system.web.url}${path}`, {
    method: 'POST',
    headers: {
      ...auth,
      'idempotency-key': key,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function read<T>(path: string): Promise<T> {
  const response = await fetch(`${system.web.url}${path}`, { headers: auth });
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

/** One first answer; every other is its replay, or 409 while the first is still running. */
async function expectOneActed(answers: Response[]): Promise<void> {
  expect(
    answers.filter((a) => a.status === 202 && !a.headers.get('idempotent-replayed')),
  ).toHaveLength(1);
  for (const answer of answers.filter((a) => a.status !== 202)) {
    expect(await answer.json()).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
  }
}

/** Reads `path` until `done` holds (the worker answers within seconds). */
async function until<T>(path: string, done: (value: T) => boolean): Promise<T> {
  let value = await read<T>(path);
  for (let i = 0; i < 300 && !done(value); i++) {
    await sleep(100);
    value = await read<T>(path);
  }
  return value;
}

interface Payment {
  paymentId: string;
  status: string;
  amount: number;
  amountCapturable: number;
  amountReceived: number;
  amountRefunded: number;
}

/** A manual-capture checkout, once the worker's confirm has authorised it. */
async function authorizedPayment(): Promise<Payment> {
  const created = await post('/api/v1/payments', randomUUID(), {
    lines: [{ productId: 'book_sre', quantity: 1 }],
    captureMethod: 'manual',
  });
  expect(created.status).toBe(201);
  const { paymentId } = (await created.json()) as Payment;
  return until<Payment>(`/api/v1/payments/${paymentId}`, (p) => p.status !== 'processing');
}

/** What the processor's ledger holds for one payment's intent: charges and refunds, in order. */
async function ledgerOf(paymentId: string) {
  const [payment] = await system.app.client.sql<{ intent: string }[]>`
    select processor_payment_intent_id as intent from payments where id = ${paymentId}`;
  return system.processorSql<{ kind: string; amount: number }[]>`
    select kind, amount::int as amount from ledger_entries where payment_intent_id = ${payment!.intent}
    order by created_at, kind`;
}

describe('REST capture, cancel and refunds through the worker and the processor', () => {
  it('a capture double-submitted and double-clicked charges the captured part once; refunds never exceed it', async () => {
    const payment = await authorizedPayment();
    expect(payment).toMatchObject({ status: 'requires_capture', amountCapturable: payment.amount });
    const path = `/api/v1/payments/${payment.paymentId}/capture`;
    const key = randomUUID();
    // Five retries of one request (one key) and two more clicks (keys of their own), at once.
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => post(path, key, { amount: 1500 })),
      post(path, randomUUID(), { amount: 1500 }),
      post(path, randomUUID(), { amount: 1500 }),
    ]);
    expect(
      answers.filter((a) => a.status === 202 && !a.headers.get('idempotent-replayed')),
    ).toHaveLength(1);
    for (const answer of answers.filter((a) => a.status !== 202)) {
      expect((await answer.json()).code).toMatch(
        /^(payment_not_authorized|idempotency_key_in_use)$/,
      );
    }
    const captured = await until<Payment>(
      `/api/v1/payments/${payment.paymentId}`,
      (p) => p.status !== 'processing',
    );
    expect(captured).toMatchObject({ status: 'succeeded', amountReceived: 1500 });
    expect(await ledgerOf(payment.paymentId)).toEqual([{ kind: 'charge', amount: 1500 }]);

    const refunds = `/api/v1/payments/${payment.paymentId}/refunds`;
    const refundKey = randomUUID();
    const first = await Promise.all(
      Array.from({ length: 3 }, () => post(refunds, refundKey, { amount: 1000 })),
    );
    await expectOneActed(first);
    const rest = await post(refunds, randomUUID());
    expect(await rest.json()).toMatchObject({ amount: 500 });
    const over = await post(refunds, randomUUID(), { amount: 1 });
    expect(await over.json()).toMatchObject({ code: 'refund_amount_too_large' });
    const listed = await until<{ refunds: { amount: number; status: string }[] }>(refunds, (l) =>
      l.refunds.every((r) => r.status !== 'pending'),
    );
    expect(listed.refunds).toMatchObject([
      { amount: 1000, status: 'succeeded' },
      { amount: 500, status: 'succeeded' },
    ]);
    expect(await read<Payment>(`/api/v1/payments/${payment.paymentId}`)).toMatchObject({
      amountReceived: 1500,
      amountRefunded: 1500,
    });
    const ledger = await ledgerOf(payment.paymentId);
    expect(
      ledger
        .filter((row) => row.kind === 'refund')
        .map((row) => row.amount)
        .sort(),
    ).toEqual([1000, 500]);
  }, 60_000);

  it('a cancel voids the authorisation: canceled, nothing charged', async () => {
    const payment = await authorizedPayment();
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 3 }, () => post(`/api/v1/payments/${payment.paymentId}/cancel`, key)),
    );
    await expectOneActed(answers);
    const canceled = await until<Payment>(
      `/api/v1/payments/${payment.paymentId}`,
      (p) => p.status !== 'processing',
    );
    expect(canceled).toMatchObject({ status: 'canceled', amountReceived: 0 });
    expect(await ledgerOf(payment.paymentId)).toEqual([]);
    const capture = await post(`/api/v1/payments/${payment.paymentId}/capture`, randomUUID());
    expect(await capture.json()).toMatchObject({ code: 'payment_not_authorized' });
  }, 60_000);

  it('refunds sent at once under keys of their own, over REST, GraphQL and tRPC, never add up past what was received', async () => {
    const payment = await paidPayment();
    const refunds = `/api/v1/payments/${payment.paymentId}/refunds`;
    // Six of the whole amount, then twelve of a quarter, each under its own key, all at once.
    const whole = await Promise.all(
      Array.from({ length: 6 }, () => post(refunds, randomUUID(), { amount: payment.amount })),
    );
    expect(whole.filter((a) => a.status === 202)).toHaveLength(1);
    for (const refused of whole.filter((a) => a.status !== 202)) {
      expect(await refused.json()).toMatchObject({ code: 'refund_amount_too_large' });
    }
    const second = await paidPayment();
    const quarter = Math.floor(second.amount / 4);
    const transports = [restRefund, graphqlRefund, trpcRefund];
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        transports[i % 3]!(randomUUID(), { paymentId: second.paymentId, amount: quarter }),
      ),
    );
    expect(answers.filter((a) => a.ok)).toHaveLength(4);
    for (const refused of answers.filter((a) => !a.ok)) {
      expect(refused.code).toBe('refund_amount_too_large');
    }
    for (const { paymentId, amount } of [payment, { ...second, amount: 4 * quarter }]) {
      const [books] = await system.app.client.sql<{ refunded: number }[]>`
        select coalesce(sum(amount), 0)::int as refunded from refunds where payment_id = ${paymentId}`;
      expect(books!.refunded).toBe(amount);
    }
  }, 60_000);

  it('one key is one money operation on every transport: the same refund replays, another use of the key is refused', async () => {
    const payment = await paidPayment();
    const key = randomUUID();
    const input = { paymentId: payment.paymentId, amount: 100 };
    const first = await restRefund(key, input);
    expect(first).toMatchObject({ ok: true, replayed: false });
    if (!first.ok) throw new Error(first.code);
    for (const transport of [graphqlRefund, trpcRefund]) {
      expect(await transport(key, input)).toMatchObject({ ok: true, refundId: first.refundId });
    }
    for (const transport of [restRefund, graphqlRefund, trpcRefund]) {
      expect(await transport(key, { ...input, amount: 101 })).toMatchObject({
        ok: false,
        code: 'idempotency_key_reused',
      });
    }
    const [books] = await system.app.client.sql<{ count: number }[]>`
      select count(*)::int as count from refunds where payment_id = ${payment.paymentId}`;
    expect(books!.count).toBe(1);

    // A key that captured one payment refunds nothing, here or on another payment.
    const authorized = await authorizedPayment();
    const captureKey = randomUUID();
    const capture = await post(`/api/v1/payments/${authorized.paymentId}/capture`, captureKey);
    expect(capture.status).toBe(202);
    for (const paymentId of [authorized.paymentId, payment.paymentId]) {
      expect(await graphqlRefund(captureKey, { paymentId, amount: 1 })).toMatchObject({
        ok: false,
        code: 'idempotency_key_reused',
      });
    }
  }, 60_000);
});

/** An automatic-capture checkout, once the worker's charge has succeeded. */
async function paidPayment(): Promise<Payment> {
  const created = await post('/api/v1/payments', randomUUID(), {
    lines: [{ productId: 'book_sre', quantity: 1 }],
  });
  expect(created.status).toBe(201);
  const { paymentId } = (await created.json()) as Payment;
  return until<Payment>(`/api/v1/payments/${paymentId}`, (p) => p.status !== 'processing');
}

type RefundAnswer = { ok: true; refundId: string; replayed: boolean } | { ok: false; code: string };
type RefundInput = { paymentId: string; amount: number };

async function restRefund(key: string, input: RefundInput): Promise<RefundAnswer> {
  const answer = await post(`/api/v1/payments/${input.paymentId}/refunds`, key, {
    amount: input.amount,
  });
  const body = await answer.json();
  if (answer.status !== 202) return { ok: false, code: body.code };
  return {
    ok: true,
    refundId: body.refundId,
    replayed: !!answer.headers.get('idempotent-replayed'),
  };
}

async function graphqlRefund(key: string, input: RefundInput): Promise<RefundAnswer> {
  const answer = await fetch(`${system.web.url}/api/graphql`, {
    method: 'POST',
    headers: { ...auth, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({
      query:
        'mutation ($paymentId: ID!, $amount: Int) { refundPayment(paymentId: $paymentId, amount: $amount) { refundId } }',
      variables: input,
    }),
  });
  const body = await answer.json();
  if (body.errors) return { ok: false, code: body.errors[0].extensions.code };
  return {
    ok: true,
    refundId: body.data.refundPayment.refundId,
    replayed: !!answer.headers.get('idempotent-replayed'),
  };
}

async function trpcRefund(key: string, input: RefundInput): Promise<RefundAnswer> {
  const answer = await fetch(`${system.web.url}/api/trpc/ops.refundPayment`, {
    method: 'POST',
    headers: { ...auth, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  const body = await answer.json();
  if (body.error) return { ok: false, code: body.error.data?.code ?? body.error.message };
  return {
    ok: true,
    refundId: body.result.data.refundId,
    replayed: !!answer.headers.get('idempotent-replayed'),
  };
}
