import type { ClientContext, ClientEvent } from '@once/chaos';

/**
 * One checkout request over HTTP, the way real clients send it, classified the Jepsen way:
 * `ok` (accepted: a payment id), `fail` (definitely not executed by this request, or a
 * definite refusal) or `info` (unknown: the request may have run). A "lost response" waits
 * until the server answered (it processed the request) and then drops the answer unread.
 */
interface PayRequest {
  webUrl: string;
  apiKey: string;
  /**
   * An operator's browser session (`name=value` of its cookie) instead of the API key: the
   * request carries the cookie and no Authorization header.
   */
  sessionCookie?: string;
  key: string;
  body:
    | {
        lines: { productId: string; quantity: number }[];
        paymentMethod?: string;
        capture?: 'manual';
        captureMethod?: 'manual';
      }
    | OperatorInput;
  timeoutMs: number;
  loseResponse?: boolean;
}

export interface PayAnswer {
  type: 'ok' | 'fail' | 'info';
  status?: number;
  paymentId?: string;
  replayed?: boolean;
  retryAfterSeconds?: number;
  /** A stable code (`idempotency_key_in_use`, ...) or the network error. */
  error?: string;
  lostResponse?: boolean;
  /** A refund's answer: the refund and its state. */
  refundId?: string;
  refundState?: string;
}

/** What an operator's capture, void or refund sends (`ops.*` input). */
interface OperatorInput {
  paymentId: string;
  amount?: number;
}

export type PayTransport = (request: PayRequest) => Promise<PayAnswer>;

/** How long a client waits before sending again: the server's `Retry-After`, else capped backoff. */
export function retryDelayMs(last: PayAnswer, attempt: number): number {
  if (last.retryAfterSeconds !== undefined) return last.retryAfterSeconds * 1000;
  return Math.min(4_000, 300 * 2 ** Math.min(attempt, 4));
}

/** Statuses after which this request provably executed nothing (fail closed, refusals). */
const DEFINITELY_NOT_EXECUTED = new Set([400, 401, 403, 404, 409, 422, 429, 503]);

function retryAfterOf(response: Response): number | undefined {
  const raw = response.headers.get('retry-after');
  if (raw === null) return undefined;
  const seconds = Number(raw);
  return Number.isFinite(seconds) ? seconds : undefined;
}

/**
 * `body` unless `signal` aborts first. Node's fetch may leave a body read pending for ever
 * when its request is aborted while the read is under way (nodejs/node#56917): a client whose
 * timeout fired would then hang instead of recording `info`: the timeout is enforced here.
 */
function beforeAbort<T>(body: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return Promise.race([
    body,
    new Promise<never>((_, reject) =>
      signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
    ),
  ]);
}

/** What a transport's answer body says: the payment (or refund) it names, or its error code. */
interface BodyReading {
  data?: { paymentId?: string; refundId?: string; status?: string } | null;
  code?: string;
}

/** POSTs `body` to `path` with the request's credential and key, and classifies the answer. */
async function send(
  request: PayRequest,
  path: string,
  body: unknown,
  read: (json: unknown) => BodyReading,
): Promise<PayAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('client timeout')), request.timeoutMs);
  try {
    const response = await fetch(`${request.webUrl}${path}`, {
      method: 'POST',
      headers: headersOf(request),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (request.loseResponse) {
      // The server has answered, so it processed the request; the client never sees it.
      controller.abort(new Error('response dropped'));
      return { type: 'info', status: response.status, error: 'response_lost', lostResponse: true };
    }
    const text = await beforeAbort(response.text(), controller.signal);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const { data, code } = read(json);
    const base = {
      ...(data?.refundId ? { refundId: data.refundId, refundState: data.status } : {}),
      status: response.status,
      retryAfterSeconds: retryAfterOf(response),
      replayed: response.headers.get('idempotent-replayed') === 'true',
    };
    if (response.ok && data?.paymentId) return { type: 'ok', paymentId: data.paymentId, ...base };
    if (DEFINITELY_NOT_EXECUTED.has(response.status))
      return { type: 'fail', error: code ?? `http_${response.status}`, ...base };
    return { type: 'info', error: code ?? `http_${response.status}`, ...base };
  } catch (error) {
    const reason = controller.signal.aborted ? 'client_timeout' : (error as Error).message;
    return {
      type: 'info',
      error: String((error as { cause?: { code?: string } }).cause?.code ?? reason),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** `POST /api/v1/payments` with `Idempotency-Key` and a Bearer API key. */
export const restPay: PayTransport = (request) =>
  send(request, '/api/v1/payments', request.body, (json) => {
    const body = json as { paymentId?: string; code?: string; type?: string } | undefined;
    return { data: body, code: body?.code ?? body?.type?.split('/').pop() };
  });

/**
 * `checkout.pay` exactly as the web client's non-batched `httpLink` sends it: one POST to
 * `/api/trpc/checkout.pay`, the input as the JSON body, the key as a header.
 */
export const trpcPay: PayTransport = (request) => trpcMutation('checkout.pay', request);

/** The money action's operation, as each transport names it. */
type MoneyAction = 'capture' | 'void' | 'refund';
const TRPC_PROCEDURE_OF = {
  capture: 'ops.capturePayment',
  void: 'ops.voidPayment',
  refund: 'ops.refundPayment',
} as const;

/**
 * The operator's capture, void or refund: as the cockpit sends it (a guarded `ops.*` tRPC
 * mutation with the action's own Idempotency-Key, authorised by the merchant's API key), or
 * over REST (`POST /api/v1/payments/{id}/capture|cancel|refunds`) or GraphQL
 * (`capturePayment`, `cancelPayment`, `refundPayment`): one operation per (tenant, key)
 * on every transport, so the same request under one key replays the same action, and the key
 * of another operation is 422.
 */
export const moneyActionOver =
  (transport: 'trpc' | 'rest' | 'graphql', action: MoneyAction): PayTransport =>
  (request) => {
    const { paymentId, amount } = request.body as OperatorInput;
    if (transport === 'trpc') return trpcMutation(TRPC_PROCEDURE_OF[action], request);
    if (transport === 'rest') {
      const path = { capture: 'capture', void: 'cancel', refund: 'refunds' }[action];
      return send(
        request,
        `/api/v1/payments/${encodeURIComponent(paymentId)}/${path}`,
        amount === undefined ? {} : { amount },
        (json) => {
          const body = json as BodyReading['data'] & { code?: string };
          return { data: body, code: body?.code };
        },
      );
    }
    const field = { capture: 'capturePayment', void: 'cancelPayment', refund: 'refundPayment' }[
      action
    ];
    const args = action === 'void' ? '$paymentId: ID!' : '$paymentId: ID!, $amount: Int';
    const call =
      action === 'void' ? 'paymentId: $paymentId' : 'paymentId: $paymentId, amount: $amount';
    const selection = action === 'refund' ? 'refundId paymentId status' : 'paymentId';
    const query = `mutation (${args}) { ${field}(${call}) { ${selection} } }`;
    const variables = {
      paymentId,
      ...(amount === undefined || action === 'void' ? {} : { amount }),
    };
    return send(request, '/api/graphql', { query, variables }, (json) => {
      const body = json as
        | {
            data?: Record<string, BodyReading['data']>;
            errors?: { extensions?: { code?: string } }[];
          }
        | undefined;
      const data = body?.data?.[field] ?? undefined;
      return {
        data: body?.errors?.length ? { ...data, paymentId: undefined } : data,
        code: body?.errors?.[0]?.extensions?.code,
      };
    });
  };

/** The credential a request carries: the operator's session cookie, or the merchant's API key. */
const headersOf = (request: PayRequest): Record<string, string> => ({
  ...(request.sessionCookie
    ? { cookie: request.sessionCookie, 'x-once-session': 'operator' }
    : { authorization: `Bearer ${request.apiKey}` }),
  'idempotency-key': request.key,
  'content-type': 'application/json',
});

/**
 * Opens an operator session with the merchant's API key (`session.start`, as the cockpit's
 * sign-in does) and answers its cookie (`name=value`), or undefined when refused.
 */
export async function signInOperator(
  webUrl: string,
  apiKey: string,
  timeoutMs: number,
): Promise<string | undefined> {
  const response = await fetch(`${webUrl}/api/trpc/session.start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey }),
    signal: AbortSignal.timeout(timeoutMs),
  }).catch(() => undefined);
  await response?.text().catch(() => '');
  if (!response?.ok) return undefined;
  const cookie = response.headers
    .getSetCookie()
    .find((line) => /^once_(operator_)?session=[^;]/.test(line));
  return cookie?.split(';')[0];
}

/** Ends the operator session on the server (`session.end`); whether the server said so. */
export async function signOutOperator(
  webUrl: string,
  sessionCookie: string,
  timeoutMs: number,
): Promise<boolean> {
  const response = await fetch(`${webUrl}/api/trpc/session.end`, {
    method: 'POST',
    headers: {
      cookie: sessionCookie,
      'x-once-session': 'operator',
      'content-type': 'application/json',
    },
    body: '{}',
    signal: AbortSignal.timeout(timeoutMs),
  }).catch(() => undefined);
  await response?.text().catch(() => '');
  return response?.ok ?? false;
}

const trpcMutation = (procedure: string, request: PayRequest) =>
  send(request, `/api/trpc/${procedure}`, request.body, (json) => {
    const body = json as
      | {
          result?: { data?: BodyReading['data'] };
          error?: { message?: string; data?: { code?: string; idempotencyCode?: string } };
        }
      | undefined;
    const error = body?.error;
    return {
      data: body?.result?.data,
      code: error?.data?.idempotencyCode ?? error?.data?.code ?? error?.message,
    };
  });

/** `GET /api/v1/payments/:id<path>` with the API key: its status and JSON body, or why not. */
async function readPayment<T>(
  webUrl: string,
  apiKey: string,
  paymentId: string,
  timeoutMs: number,
  path = '',
): Promise<{ status: number; body?: T; error?: string }> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(
      `${webUrl}/api/v1/payments/${encodeURIComponent(paymentId)}${path}`,
      { headers: { authorization: `Bearer ${apiKey}` }, signal },
    );
    const body = (await beforeAbort(
      response.json().catch(() => undefined),
      signal,
    )) as T;
    if (!response.ok) return { status: response.status, error: `http_${response.status}` };
    return { status: response.status, body };
  } catch (error) {
    return { status: 0, error: (error as Error).message };
  }
}

/** A payment's state as `GET /api/v1/payments/:id` shows it, or why not. */
export async function readPaymentState(
  ...args: [webUrl: string, apiKey: string, paymentId: string, timeoutMs: number]
): Promise<{
  status: number;
  state?: string;
  terminal?: boolean;
  /** While it `requires_action`: where the bank's 3-D Secure challenge is. */
  nextActionUrl?: string;
  error?: string;
}> {
  const { status, body, error } = await readPayment<
    { status?: string; terminal?: boolean; nextAction?: { url?: string } | null } | undefined
  >(...args);
  if (error) return { status, error };
  return {
    status,
    state: body?.status,
    terminal: body?.terminal,
    nextActionUrl: body?.nextAction?.url,
  };
}

/**
 * Reads the payment's state and records the read as a `status` op: `ok` with the state, else
 * `fail` when `refused(status)` (an answer that will not change), `info` otherwise.
 */
export async function recordPaymentState(
  ctx: ClientContext,
  base: Pick<ClientEvent, 'intent' | 'tenantId' | 'key' | 'process'>,
  read: { apiKey: string; paymentId: string; timeoutMs: number },
  refused: (status: number) => boolean = () => false,
) {
  const { paymentId } = read;
  const complete = ctx.history.invoke({ ...base, f: 'status' });
  const view = await readPaymentState(ctx.webUrl(), read.apiKey, paymentId, read.timeoutMs);
  if (view.state) complete('ok', { status: view.status, paymentId, state: view.state });
  else
    complete(refused(view.status) ? 'fail' : 'info', {
      status: view.status,
      paymentId,
      error: view.error,
    });
  return view;
}

/** A payment's refunds as `GET /api/v1/payments/:id/refunds` shows them, or why not. */
export async function readRefundStates(
  ...args: [webUrl: string, apiKey: string, paymentId: string, timeoutMs: number]
): Promise<{ status: number; refunds?: { refundId: string; status: string }[]; error?: string }> {
  const read = await readPayment<{ refunds?: { refundId: string; status: string }[] } | undefined>(
    ...args,
    '/refunds',
  );
  if (read.error || !read.body?.refunds)
    return { status: read.status, error: `http_${read.status}` };
  return { status: read.status, refunds: read.body.refunds };
}
