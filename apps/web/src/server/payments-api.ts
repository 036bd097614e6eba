import type { Transaction } from '@once/api';
import { authenticateApiKey } from '@once/api/auth';
import {
  normalisePayInput,
  PAY_OPERATIONS,
  type PayOrigin,
  type PayResult,
  pay,
  recordGuardAnswer,
} from '@once/api/checkout';
import { toProblemResponse } from '@once/api/errors';
import { readMerchantPayment } from '@once/api/money-actions';
import { IDEMPOTENT_REPLAYED_HEADER, type StoredResponse } from '@once/idempotency';
import { fetchIdempotency, responseOf, storedJson } from '@once/idempotency/fetch';
import { API_MAX_BODY_BYTES, refuseDeclaredBodyOver } from './body-limit.ts';
import { readJsonBody, requireJsonContentType } from './payment-json-body.ts';
import { merchantPayInput, toPayInput } from './payment-merchant-input.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * Refusals as problem+json, and a database that is away as the key store's fail-closed 503
 * (nothing ran, a retry with the same key is safe); anything else stays a 500 for Next to log.
 */
export async function answeringApiErrors(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    const problem = toProblemResponse(error);
    if (!problem) throw error;
    if (problem.status === 503)
      console.log(`web: database unavailable, answering 503: ${String(error)}`);
    return problem;
  }
}

/**
 * 201 for a new payment; 200 + `Idempotent-Replayed` for the payment this key already made, with
 * its status as the merchant reads it now (read inside `pay`'s transaction). In the stored form
 * (`storedJson`): completed with it, the guard reads no body back; the replayed header is sent
 * with `responseOf`, not stored.
 */
async function payAnswer(
  tx: Transaction,
  tenantId: string,
  {
    result,
    origin,
    captureMethod,
  }: { result: PayResult; origin: PayOrigin; captureMethod: string },
): Promise<{ stored: StoredResponse; sent: Response }> {
  const status =
    origin === 'created'
      ? result.status
      : (await readMerchantPayment(tx, tenantId, result.paymentId)).status;
  const stored = storedJson(
    { ...result, status, captureMethod },
    {
      status: origin === 'created' ? 201 : 200,
      headers: { location: `/api/v1/payments/${result.paymentId}` },
    },
  );
  const sent = responseOf(
    stored,
    origin === 'existing' ? { [IDEMPOTENT_REPLAYED_HEADER]: 'true' } : undefined,
  );
  return { stored, sent };
}

const PAYMENTS_ROUTE = 'POST /api/v1/payments';

/**
 * `POST /api/v1/payments`: the REST face of `checkout.pay`, guarded by `Idempotency-Key`. Bearer
 * API key only. The body is bounded and read ONCE before anything is stored; the key's
 * fingerprint is the validated, normalised input, exactly what the handler uses. The payment is
 * unique per (tenant, key) across transports and beyond the key's TTL (see `pay`).
 */
export function createPaymentsPostHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (request: Request): Promise<Response> =>
    answeringApiErrors(async () => {
      requireJsonContentType(request, PAYMENTS_ROUTE);
      refuseDeclaredBodyOver(request, API_MAX_BODY_BYTES);
      const { deps } = await getRuntime();
      // Authenticate before reading the body or looking at the key: an anonymous caller learns
      // nothing and costs no more than its headers.
      const tenant = await authenticateApiKey(deps.db, request.headers.get('authorization'));
      const input = toPayInput(
        await readJsonBody(request, merchantPayInput, { route: PAYMENTS_ROUTE }),
      );
      // The binding holds no state of its own; the engine is the runtime's.
      const http = fetchIdempotency(deps.idempotencyEngine, {
        // A `pay` replayed from its stored response, or refused by its key (409, 422), still
        // shows on the payment's timeline.
        onAnswered: (answer) =>
          recordGuardAnswer(deps.db, answer, () => JSON.parse(answer.response.body ?? 'null')),
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
                  const answer = await payAnswer(tx, tenant.tenantId, {
                    result,
                    origin,
                    captureMethod: input.capture ?? 'automatic',
                  });
                  await exec.complete(tx, answer.stored);
                  response = answer.sent;
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

/** A GET of the merchant API: Bearer API key only, `read` of the caller's tenant (`no-store`). */
export function merchantGetHandler(
  getRuntime: () => Promise<WebRuntime>,
  read: (db: WebRuntime['deps']['db'], tenantId: string, id: string) => Promise<unknown>,
) {
  return async (request: Request, id: string): Promise<Response> =>
    answeringApiErrors(async () => {
      const { deps } = await getRuntime();
      const tenant = await authenticateApiKey(deps.db, request.headers.get('authorization'));
      const view = await read(deps.db, tenant.tenantId, id);
      return Response.json(view, { headers: { 'cache-control': 'no-store' } });
    });
}

/** `GET /api/v1/payments/:id`: the payment of the caller's tenant, or 404. */
export function createPaymentGetHandler(getRuntime: () => Promise<WebRuntime>) {
  return merchantGetHandler(getRuntime, readMerchantPayment);
}
