import {
  type ApiDependencies,
  type AuthenticatedTenant,
  CheckoutError,
  checkoutProblemResponse,
  isCheckoutError,
  type PayResult,
  pay,
  payInput,
  paymentStatus,
} from '@once/api';
import { isTransientDatabaseError } from '@once/db';
import { IdempotencyError } from '@once/idempotency';
import {
  problemDetailsResponse,
  storedResponseFrom,
  withIdempotency,
} from '@once/idempotency/fetch';
import { authenticateApiKey } from './authenticate-api-key.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * Renders CheckoutErrors as problem+json, and a database that is unreachable (down, restarting,
 * our connection terminated) as the same fail-closed 503 the key store gives: authentication
 * reads the same database before the key is looked at, nothing ran, and a retry with the same
 * key is safe. Anything else stays a 500 for Next to log.
 */
async function answeringCheckoutErrors(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (isCheckoutError(error)) return checkoutProblemResponse(error);
    if (isTransientDatabaseError(error)) {
      console.log(`web: database unavailable, answering 503: ${String(error)}`);
      return problemDetailsResponse(
        new IdempotencyError('idempotency_store_unavailable', {
          retryAfterSeconds: 1,
          cause: error,
        }),
      );
    }
    throw error;
  }
}

async function readPayInput(request: Request) {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    throw new CheckoutError('invalid_input', 'The body must be JSON');
  }
  const parsed = payInput.safeParse(body);
  if (!parsed.success) {
    throw new CheckoutError('invalid_input', 'Invalid input', { issues: parsed.error.issues });
  }
  return parsed.data;
}

function createdResponse(result: PayResult): Response {
  return Response.json(result, {
    status: 201,
    headers: { location: `/api/v1/payments/${result.paymentId}` },
  });
}

/**
 * `POST /api/v1/payments`: the REST face of `checkout.pay` (same business function), guarded
 * by `Idempotency-Key` through `withIdempotency`. Bearer API key only. 201 with the payment,
 * its replay with `Idempotent-Replayed: true`; refusals are `application/problem+json`.
 * Refused input throws out of the guarded handler, so its key is released, not stored.
 * Atomic idempotency mode: concurrent duplicates wait for the first transaction and replay it.
 *
 * @example
 * export const POST = createPaymentsPostHandler(getWebRuntime);
 */
export function createPaymentsPostHandler(getRuntime: () => Promise<WebRuntime>) {
  const authenticated = new WeakMap<Request, AuthenticatedTenant>();
  let guarded: ((request: Request) => Promise<Response>) | undefined;

  function guardedHandler(deps: ApiDependencies) {
    guarded ??= withIdempotency(
      async (request, exec) => {
        const input = await readPayInput(request);
        const tenant = authenticated.get(request)!;
        let response: Response | undefined;
        await pay({
          ctx: {
            db: deps.db,
            tenantId: tenant.tenantId,
            placedBy: tenant.principal,
            idempotency: {
              key: exec.key!,
              complete: async (tx, result) => {
                response = createdResponse(result);
                await exec.complete(tx, await storedResponseFrom(response));
              },
            },
          },
          input,
        });
        return response!;
      },
      {
        idempotency: deps.idempotencyEngine,
        operation: 'payments.create',
        // `pay` writes the payment, its outbox job, the NOTIFY and the stored response in ONE
        // transaction: the key is inserted completed inside it (no reservation before).
        policy: { mode: 'atomic' },
        getTenantId: (request) => authenticated.get(request)!.tenantId,
        // Each API key has its own new-key allowance, apart from the merchant's shoppers.
        getPrincipal: (request) => authenticated.get(request)!.principal,
      },
    );
    return guarded;
  }

  return async (request: Request): Promise<Response> =>
    answeringCheckoutErrors(async () => {
      const { deps } = await getRuntime();
      // Authenticate before looking at the key: an anonymous caller learns nothing.
      authenticated.set(request, await authenticateApiKey(deps.db, request));
      return guardedHandler(deps)(request);
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
    answeringCheckoutErrors(async () => {
      const { deps } = await getRuntime();
      const tenant = await authenticateApiKey(deps.db, request);
      const view = await paymentStatus({
        ctx: { db: deps.db, tenantId: tenant.tenantId },
        input: { paymentId },
      });
      return Response.json(view, { headers: { 'cache-control': 'no-store' } });
    });
}
