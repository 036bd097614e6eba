import type { Transaction } from '@once/api';
import { authenticateApiKey } from '@once/api/auth';
import {
  capturePaymentInput,
  listMerchantRefunds,
  type MoneyActionContext,
  merchantRefundOf,
  type PaymentActionResult,
  type RefundResult,
  readMerchantPayment,
  refundPayment,
  refundPaymentInput,
  requestAuthorizationAction,
  requestKeyOf,
} from '@once/api/money-actions';
import { fetchIdempotency, responseOf, storedJson } from '@once/idempotency/fetch';
import { z } from 'zod';
import { API_MAX_BODY_BYTES, refuseDeclaredBodyOver } from './body-limit.ts';
import { readJsonBody } from './payment-json-body.ts';
import { answeringApiErrors, merchantGetHandler } from './payments-api.ts';
import type { WebRuntime } from './runtime.ts';

// The bodies: the business inputs' own rules, the payment id taken from the path.
const captureBody = capturePaymentInput.omit({ paymentId: true });
type CaptureBody = z.infer<typeof captureBody>;
const cancelBody = z.object({});
type CancelBody = z.infer<typeof cancelBody>;
const refundBody = refundPaymentInput.omit({ paymentId: true });
type RefundBody = z.infer<typeof refundBody>;

/** One guarded REST money route: its key-store operation, its body, its business call, its answer. */
interface MoneyActionRoute<TBody, TResult> {
  /** The route, for messages (`POST /api/v1/payments/{id}/capture`). */
  route: string;
  /** Where to poll what the action moves (`Location` of the 202). */
  location(paymentId: string): string;
  /** The key-store operation: keys are scoped by it, apart from tRPC's and GraphQL's. */
  operation: string;
  body: z.ZodType<TBody>;
  /** What the key's fingerprint covers besides the payment id: the body, normalised. */
  fingerprintOf(body: TBody): unknown;
  act(ctx: MoneyActionContext<TResult>, paymentId: string, body: TBody): Promise<TResult>;
  /** The resulting object, read inside the action's own transaction. */
  answer(tx: Transaction, tenantId: string, result: TResult, body: TBody): Promise<unknown>;
}

/**
 * A REST money route: Bearer API key only (the tenant is never the body's), guarded by
 * `Idempotency-Key`: the action, its outbox job and the stored 202 commit in ONE transaction, so
 * a retry replays it; a refusal rolls everything back and releases the key.
 */
function moneyActionHandler<TBody, TResult>(
  getRuntime: () => Promise<WebRuntime>,
  spec: MoneyActionRoute<TBody, TResult>,
) {
  return async (request: Request, paymentId: string): Promise<Response> =>
    answeringApiErrors(async () => {
      refuseDeclaredBodyOver(request, API_MAX_BODY_BYTES);
      const { deps } = await getRuntime();
      // Authenticate before reading the body or looking at the key, as the pay route does.
      const tenant = await authenticateApiKey(deps.db, request.headers.get('authorization'));
      const body = await readJsonBody(request, spec.body, { route: spec.route, optional: true });
      const http = fetchIdempotency(deps.idempotencyEngine);
      return http.handle(
        request,
        {
          tenantId: tenant.tenantId,
          operation: spec.operation,
          // The key names one action on one payment: another payment or body is 422.
          fingerprintInput: { paymentId, ...(spec.fingerprintOf(body) as object) },
          principal: tenant.principal,
          // Read the key first, always: a retry is answered (or 422) before the payment's state
          // is looked at, so a finished capture's retry replays instead of being refused.
          policy: { mode: 'atomic', precheck: true },
        },
        async (exec) => {
          let response: Response | undefined;
          await spec.act(
            {
              db: deps.db,
              tenantId: tenant.tenantId,
              principal: tenant.principal,
              requestKey: requestKeyOf(exec),
              notifyOutbox: deps.outboxNotify,
              complete: async (tx, result) => {
                const answer = await spec.answer(tx, tenant.tenantId, result, body);
                // The stored form: the guard reads no body back (`storedJson`).
                const stored = storedJson(answer, {
                  status: 202,
                  headers: { location: spec.location(paymentId) },
                });
                await exec.complete(tx, stored);
                response = responseOf(stored);
              },
            },
            paymentId,
            body,
          );
          return response!;
        },
      );
    });
}

const paymentUrl = (paymentId: string) => `/api/v1/payments/${encodeURIComponent(paymentId)}`;

/** The payment as it reads once its capture or cancel is accepted (`processing`). */
export const paymentAfterAction = (
  tx: Transaction,
  tenantId: string,
  result: PaymentActionResult,
) => readMerchantPayment(tx, tenantId, result.paymentId);

/** `POST /api/v1/payments/{id}/capture`: all of an authorised payment, or `amount`. */
export function createPaymentCaptureHandler(getRuntime: () => Promise<WebRuntime>) {
  return moneyActionHandler<CaptureBody, PaymentActionResult>(getRuntime, {
    route: 'POST /api/v1/payments/{id}/capture',
    location: paymentUrl,
    operation: 'payments.capture',
    body: captureBody,
    fingerprintOf: (body) => ({ amount: body.amount ?? null }),
    act: (ctx, paymentId, body) =>
      requestAuthorizationAction(ctx, 'capture', { paymentId, ...body }),
    answer: paymentAfterAction,
  });
}

/** `POST /api/v1/payments/{id}/cancel`: voids an authorised payment. */
export function createPaymentCancelHandler(getRuntime: () => Promise<WebRuntime>) {
  return moneyActionHandler<CancelBody, PaymentActionResult>(getRuntime, {
    route: 'POST /api/v1/payments/{id}/cancel',
    location: paymentUrl,
    operation: 'payments.cancel',
    body: cancelBody,
    fingerprintOf: () => ({}),
    act: (ctx, paymentId) => requestAuthorizationAction(ctx, 'void', { paymentId }),
    answer: paymentAfterAction,
  });
}

/** `POST /api/v1/payments/{id}/refunds`: all that is left or `amount`, never more than received. */
export function createPaymentRefundHandler(getRuntime: () => Promise<WebRuntime>) {
  return moneyActionHandler<RefundBody, RefundResult>(getRuntime, {
    route: 'POST /api/v1/payments/{id}/refunds',
    location: (paymentId) => `${paymentUrl(paymentId)}/refunds`,
    operation: 'payments.refunds.create',
    body: refundBody,
    fingerprintOf: (body) => ({ amount: body.amount ?? null, reason: body.reason ?? null }),
    act: (ctx, paymentId, body) => refundPayment(ctx, { paymentId, ...body }),
    answer: async (_tx, _tenantId, result, body) => merchantRefundOf(result, body.reason ?? null),
  });
}

/** `GET /api/v1/payments/{id}/refunds`: see {@link readMerchantRefunds}. */
export function createPaymentRefundsGetHandler(getRuntime: () => Promise<WebRuntime>) {
  return merchantGetHandler(getRuntime, async (db, tenantId, paymentId) => ({
    paymentId,
    refunds: await readMerchantRefunds(db, tenantId, paymentId),
  }));
}

/** A payment's refunds, oldest first; first the payment: another tenant's (or none) is 404. */
export async function readMerchantRefunds(
  db: WebRuntime['deps']['db'],
  tenantId: string,
  paymentId: string,
) {
  await readMerchantPayment(db, tenantId, paymentId);
  return listMerchantRefunds(db, tenantId, paymentId);
}
