import type { Answer, ModelRequest, RequestOp } from './money-model.ts';

/** A request the API is sent (not an event of the run). */
type Sent = ModelRequest & { op: RequestOp };

/**
 * One model request over its transport, as a merchant's server, the cockpit or a shopper's
 * checkout sends it with `credential` (the API key for REST, GraphQL and tRPC; the session's
 * cookie, `name=value`, for the others), reduced to an answer: accepted with the id it names,
 * or refused with its stable code.
 */
export async function sendRequest(
  url: string,
  r: Sent,
  paymentId: string | undefined,
  credential: string | undefined,
): Promise<Answer> {
  const credentials: Record<string, string> =
    r.transport === 'cockpit' || r.transport === 'shopper'
      ? {
          ...(credential ? { cookie: credential } : {}),
          ...(r.transport === 'cockpit' ? { 'x-once-session': 'operator' } : {}),
        }
      : { authorization: `Bearer ${credential}` };
  const headers: Record<string, string> = {
    ...credentials,
    'idempotency-key': r.key,
    'content-type': 'application/json',
  };
  // Each transport's body as JSON; an answer that is not JSON (a bare 500) is no answer the API
  // documents: the checker names it, and no model allows it.
  const send = async (path: string, body: unknown) => {
    const answer = await fetch(`${url}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    const text = await answer.text();
    try {
      return { status: answer.status, body: JSON.parse(text) };
    } catch {
      return { status: answer.status, body: undefined };
    }
  };
  const undocumented = (status: number): Answer => ({ ok: false, code: `http_${status}` });
  if (r.transport === 'rest') {
    const { status, body } = await send(restPath(r, paymentId), restBody(r));
    if (!body) return undocumented(status);
    if (status >= 400) return { ok: false, code: body.code };
    return { ok: true, id: r.op === 'pay' ? body.paymentId : body.refundId };
  }
  if (r.transport === 'graphql') {
    const { query, variables, field, id } = graphqlMutation(r, paymentId);
    const { status, body } = await send('/api/graphql', { query, variables });
    if (!body) return undocumented(status);
    if (body.errors) return { ok: false, code: body.errors[0].extensions?.code ?? 'unknown' };
    return { ok: true, id: id ? body.data[field][id] : undefined };
  }
  const procedure = {
    pay: 'checkout.pay',
    capture: 'ops.capturePayment',
    void: 'ops.voidPayment',
    refund: 'ops.refundPayment',
  }[r.op];
  // A capture method only when manual: a shopper may name none (and the key's fingerprint
  // covers what was sent).
  const input =
    r.op === 'pay'
      ? { lines: linesOf(r), ...(r.manual ? { capture: 'manual' } : {}) }
      : { paymentId, ...(r.amount === undefined ? {} : { amount: r.amount }) };
  const { status, body } = await send(`/api/trpc/${procedure}`, input);
  if (!body) return undocumented(status);
  if (body.error) return { ok: false, code: body.error.data?.code ?? 'unknown' };
  const data = body.result.data;
  return {
    ok: true,
    id: data.paymentId && r.op === 'pay' ? data.paymentId : (data.refundId ?? data.actionId),
  };
}

/** The cart of a pay: the one product the search buys from the request's merchant. */
const PRODUCTS = { a: 'book_sre', b: 'mug' } as const;
const linesOf = (r: ModelRequest) => [{ productId: PRODUCTS[r.tenant ?? 'a'], quantity: r.amount }];

function restPath(r: Sent, paymentId: string | undefined): string {
  if (r.op === 'pay') return '/api/v1/payments';
  const action = { capture: 'capture', void: 'cancel', refund: 'refunds' }[r.op];
  return `/api/v1/payments/${paymentId}/${action}`;
}

function restBody(r: Sent): unknown {
  if (r.op === 'pay') {
    return { lines: linesOf(r), captureMethod: r.manual ? 'manual' : 'automatic' };
  }
  return r.amount === undefined ? {} : { amount: r.amount };
}

/** Each operation's GraphQL mutation, its field, and the id it answers with (if any). */
const GRAPHQL_MUTATIONS = {
  pay: {
    query: 'mutation ($input: PayInput!) { pay(input: $input) { paymentId } }',
    field: 'pay',
    id: 'paymentId',
  },
  capture: {
    query:
      'mutation ($paymentId: ID!, $amount: Int) { capturePayment(paymentId: $paymentId, amount: $amount) { paymentId } }',
    field: 'capturePayment',
  },
  void: {
    query: 'mutation ($paymentId: ID!) { cancelPayment(paymentId: $paymentId) { paymentId } }',
    field: 'cancelPayment',
  },
  refund: {
    query:
      'mutation ($paymentId: ID!, $amount: Int) { refundPayment(paymentId: $paymentId, amount: $amount) { refundId } }',
    field: 'refundPayment',
    id: 'refundId',
  },
} satisfies Record<RequestOp, { query: string; field: string; id?: string }>;

function graphqlMutation(r: Sent, paymentId: string | undefined) {
  const mutation: { query: string; field: string; id?: string } = GRAPHQL_MUTATIONS[r.op];
  const variables =
    r.op === 'pay'
      ? { input: restBody(r) }
      : r.op === 'void'
        ? { paymentId }
        : { paymentId, ...(r.amount === undefined ? {} : { amount: r.amount }) };
  return { ...mutation, variables };
}
