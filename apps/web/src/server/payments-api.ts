import {
  normalisePayInput,
  PAY_OPERATIONS,
  type PayInput,
  type PayOrigin,
  type PayResult,
  pay,
  payInput,
  paymentStatus,
  recordGuardReplay,
} from '@once/api/checkout';
import { ApiError, toProblemResponse } from '@once/api/errors';
import { IDEMPOTENT_REPLAYED_HEADER } from '@once/idempotency';
import { fetchIdempotency } from '@once/idempotency/fetch';
import { authenticateApiKey } from './authenticate-api-key.ts';
import {
  API_MAX_BODY_BYTES,
  declaresBodyOver,
  payloadTooLarge,
  readTextWithinLimit,
} from './body-limit.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * Renders ApiErrors as problem+json, and a database that is unreachable (down, restarting,
 * our connection terminated) as the same fail-closed 503 the key store gives: authentication
 * reads the same database before the key is looked at, nothing ran, and a retry with the same
 * key is safe. Anything else stays a 500 for Next to log.
 */
async function answeringApiErrors(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    // The one mapping of @once/api (`toProblemResponse`): refusals as problem+json, a
    // database that is away as 503 idempotency_store_unavailable with Retry-After.
    const problem = toProblemResponse(error);
    if (!problem) throw error;
    if (problem.status === 503)
      console.log(`web: database unavailable, answering 503: ${String(error)}`);
    return problem;
  }
}

/** The one media type `POST /api/v1/payments` reads. */
const PAYMENTS_MEDIA_TYPE = 'application/json';

/**
 * Whether `Content-Type` is `application/json` (any case, optional `charset=utf-8`): the only
 * body the route parses. Anything else would be fingerprinted one way and parsed another.
 */
function isJsonContentType(header: string | null): boolean {
  if (header === null) return false;
  const [type, ...params] = header.split(';');
  if (type!.trim().toLowerCase() !== PAYMENTS_MEDIA_TYPE) return false;
  return params.every((param) => {
    const [name, value = ''] = param.split('=');
    if (name!.trim().toLowerCase() !== 'charset') return true;
    return value.trim().replace(/^"|"$/g, '').toLowerCase() === 'utf-8';
  });
}

function requireJsonContentType(request: Request): void {
  if (isJsonContentType(request.headers.get('content-type'))) return;
  throw new ApiError(
    'unsupported_media_type',
    'POST /api/v1/payments accepts only Content-Type: application/json',
    { accepted: [PAYMENTS_MEDIA_TYPE] },
  );
}

/** The body, read once within the limit, as a validated `PayInput` (400 `invalid_input`). */
async function readPayInput(request: Request): Promise<PayInput> {
  const text = await readTextWithinLimit(request, API_MAX_BODY_BYTES);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_input', 'The body must be JSON');
  }
  const parsed = payInput.safeParse(body);
  if (!parsed.success) {
    throw new ApiError('invalid_input', 'Invalid input', { issues: parsed.error.issues });
  }
  return parsed.data;
}

/** 201 for a new payment; 200 + `Idempotent-Replayed` for the payment this key already made. */
function payResponse(result: PayResult, origin: PayOrigin): Response {
  return Response.json(result, {
    status: origin === 'created' ? 201 : 200,
    headers: {
      location: `/api/v1/payments/${result.paymentId}`,
      ...(origin === 'existing' ? { [IDEMPOTENT_REPLAYED_HEADER]: 'true' } : {}),
    },
  });
}

/**
 * `POST /api/v1/payments`: the REST face of `checkout.pay` (same business function), guarded
 * by `Idempotency-Key` through `fetchIdempotency().handle`. Bearer API key only. 201 with the payment,
 * its replay with `Idempotent-Replayed: true`; refusals are `application/problem+json`.
 *
 * Before anything is stored or counted: a Content-Type other than `application/json` is 415
 * `unsupported_media_type`; a body over {@link API_MAX_BODY_BYTES} is 413 `payload_too_large`
 * (by `Content-Length`, then by a counted read); the body is read ONCE and validated (400).
 * The key's fingerprint is the validated, normalised input: exactly what the handler uses.
 * Atomic idempotency mode: concurrent duplicates wait for the first transaction and replay it.
 * The payment itself is unique per (tenant, key) across tRPC and REST and beyond the key's TTL
 * (see `pay`): such a retry gets 200 with that payment, or 422 if the cart differs.
 *
 * @example
 * export const POST = createPaymentsPostHandler(getWebRuntime);
 */
export function createPaymentsPostHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (request: Request): Promise<Response> =>
    answeringApiErrors(async () => {
      requireJsonContentType(request);
      if (declaresBodyOver(request, API_MAX_BODY_BYTES)) throw payloadTooLarge(API_MAX_BODY_BYTES);
      const { deps } = await getRuntime();
      // Authenticate before reading the body or looking at the key: an anonymous caller learns
      // nothing and costs no more than its headers.
      const tenant = await authenticateApiKey(deps.db, request);
      const input = await readPayInput(request);
      // The binding holds no state of its own; the engine is the runtime's.
      const http = fetchIdempotency(deps.idempotencyEngine, {
        // A `pay` replayed from its stored response still shows on the payment's timeline.
        onAnswered: (answer) =>
          recordGuardReplay(deps.db, answer, () => JSON.parse(answer.response.body ?? 'null')),
      });
      return http.handle(
        request,
        {
          tenantId: tenant.tenantId,
          operation: PAY_OPERATIONS.rest,
          // The body is consumed: the fingerprint is the validated, normalised input.
          fingerprintInput: normalisePayInput(input),
          // Each API key has its own new-key allowance, apart from the merchant's shoppers.
          principal: tenant.principal,
          // `pay` writes the payment, its outbox job, the NOTIFY and the stored response in ONE
          // transaction: the key is inserted completed inside it (no reservation before).
          policy: { mode: 'atomic' },
        },
        async (exec) => {
          let response: Response | undefined;
          await pay({
            ctx: {
              transport: 'rest',
              notifyOutbox: deps.outboxNotify,
              db: deps.db,
              tenantId: tenant.tenantId,
              placedBy: tenant.principal,
              idempotency: {
                key: exec.key!,
                complete: async (tx, result, origin) => {
                  response = payResponse(result, origin);
                  await exec.complete(tx, response);
                },
              },
            },
            input,
          });
          return response!;
        },
      );
    });
}

/**
 * `GET /api/v1/payments/:id`: the payment of the caller's tenant, or 404 problem+json.
 *
 * @example
 * export const GET = (req, { params }) => getPayment(req, (await params).id);
 */
export function createPaymentGetHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (request: Request, paymentId: string): Promise<Response> =>
    answeringApiErrors(async () => {
      const { deps } = await getRuntime();
      const tenant = await authenticateApiKey(deps.db, request);
      const view = await paymentStatus({
        ctx: { db: deps.db, tenantId: tenant.tenantId },
        input: { paymentId },
      });
      return Response.json(view, { headers: { 'cache-control': 'no-store' } });
    });
}
