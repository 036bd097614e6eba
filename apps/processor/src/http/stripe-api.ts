import type { HttpBindings } from '@hono/node-server';
import { eq } from 'drizzle-orm';
import { type Context, Hono } from 'hono';
import type { ProcessorDatabase } from '../db/client.ts';
import { accounts } from '../db/schema/index.ts';
import { listEvents, retrieveEvent } from '../events/read-events.ts';
import { applyReadFault, takeRequestFaults } from '../faults/apply-faults.ts';
import type { MutatingOperation, ReadOperationName } from '../faults/fault-kinds.ts';
import { cancelPaymentIntent } from '../payments/cancel-payment-intent.ts';
import { capturePaymentIntent } from '../payments/capture-payment-intent.ts';
import { confirmPaymentIntent } from '../payments/confirm-payment-intent.ts';
import { createPaymentIntent } from '../payments/create-payment-intent.ts';
import {
  listPaymentIntents,
  retrievePaymentIntent,
  searchPaymentIntents,
} from '../payments/read-payment-intents.ts';
import { createRefund, listRefunds, retrieveRefund } from '../refunds/refunds.ts';
import { type FormParams, parseFormParams } from '../stripe/form-params.ts';
import { StripeApiError } from '../stripe/stripe-error.ts';
import type { IdempotentMutation } from '../stripe/stripe-idempotency.ts';
import {
  type Account,
  newRequestId,
  type OperationTiming,
  type ReadOperation,
  type StripeOperation,
  stripeResponse,
} from '../stripe/stripe-operation.ts';
import { markEventRequest } from '../webhooks/enqueue-event.ts';

export interface StripeApiOptions {
  db: ProcessorDatabase;
  idempotentMutation: IdempotentMutation;
  timing: OperationTiming;
  /** Where shoppers reach the hosted 3-D Secure page; unset: the request's own origin. */
  publicUrl?: string;
  log: (line: string) => void;
}

type Env = { Bindings: Partial<HttpBindings> };

/**
 * The Stripe-compatible REST surface (`/v1/...`): each route authenticates, decodes the
 * form, lets its faults act at their points (faults/apply-faults.ts) and runs its operation,
 * a mutation under its Idempotency-Key in one transaction.
 */
export function createStripeApi(options: StripeApiOptions): Hono<Env> {
  const { db, log } = options;
  const app = new Hono<Env>();
  const input = (c: Context<Env>, account: Account, params: FormParams, key: string | null) => ({
    account,
    params,
    pathParams: c.req.param() as Record<string, string>,
    idempotencyKey: key,
    timing: options.timing,
    challengeBaseUrl: options.publicUrl ?? new URL(c.req.url).origin,
  });

  // Each route names its operation (`payment_intents.confirm`): what a fault's `operation` matches.
  const read = (name: ReadOperationName, operation: ReadOperation) => async (c: Context<Env>) => {
    const account = await authenticate(db, c.req.raw);
    const url = new URL(c.req.url);
    const objectId = c.req.param('id') ?? null;
    await applyReadFault(
      db,
      { accountId: account.id, path: url.pathname, operation: name, objectId },
      log,
    );
    const params = parseFormParams(url.search.slice(1));
    return stripeResponse(await operation(db, input(c, account, params, null)));
  };

  const mutate =
    (name: MutatingOperation, operation: StripeOperation) => async (c: Context<Env>) => {
      const request = c.req.raw;
      const account = await authenticate(db, request);
      const params = parseFormParams(await c.req.text());
      const path = new URL(request.url).pathname;
      const idempotencyKey = request.headers.get('idempotency-key');
      const label = `${request.method} ${path} ${account.id} key=${idempotencyKey ?? '-'}`;
      const faults = await takeRequestFaults(
        db,
        {
          accountId: account.id,
          method: request.method,
          path,
          operation: name,
          idempotencyKey,
          objectId: c.req.param('id') ?? null,
          label,
        },
        log,
      );
      await faults.beforeKeyLayer();
      const response = await options.idempotentMutation(
        request,
        { accountId: account.id, params },
        async (exec) => {
          // Inside the key's lease: a retry arriving now sees it in progress (409).
          await faults.beforeWork();
          return db.transaction(async (tx) => {
            const requestId = newRequestId();
            // The events this request's work writes name it (`event.request.id`).
            await markEventRequest(tx, requestId);
            const result = await operation(tx, input(c, account, params, idempotencyKey));
            await faults.afterWork(tx, account.id, result);
            const rendered = stripeResponse(result, requestId);
            // `complete` reads `rendered` for the store; the guard sends the same status, headers and body.
            await exec.complete(tx, rendered);
            return rendered;
          });
        },
      );
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      log(`${label} -> ${response.status}${replayed ? ' (replayed)' : ''}`);
      return faults.answer(response, c.env?.incoming?.socket);
    };

  app.post('/v1/payment_intents', mutate('payment_intents.create', createPaymentIntent));
  app.get('/v1/payment_intents', read('payment_intents.list', listPaymentIntents));
  // Registered before `/:id` so `search` is never taken for an id.
  app.get('/v1/payment_intents/search', read('payment_intents.search', searchPaymentIntents));
  app.get('/v1/payment_intents/:id', read('payment_intents.retrieve', retrievePaymentIntent));
  app.post(
    '/v1/payment_intents/:id/confirm',
    mutate('payment_intents.confirm', confirmPaymentIntent),
  );
  app.post('/v1/payment_intents/:id/cancel', mutate('payment_intents.cancel', cancelPaymentIntent));
  app.post(
    '/v1/payment_intents/:id/capture',
    mutate('payment_intents.capture', capturePaymentIntent),
  );
  app.post('/v1/refunds', mutate('refunds.create', createRefund));
  app.get('/v1/refunds', read('refunds.list', listRefunds));
  app.get('/v1/refunds/:id', read('refunds.retrieve', retrieveRefund));
  app.get('/v1/events', read('events.list', listEvents));
  app.get('/v1/events/:id', read('events.retrieve', retrieveEvent));
  return app;
}

/**
 * Finds the merchant account of a request from `Authorization: Bearer sk_test_...`
 * (or HTTP Basic with the key as user name, as curl -u does). Stripe's 401 otherwise.
 */
async function authenticate(db: ProcessorDatabase, request: Request): Promise<Account> {
  const key = secretKeyOf(request.headers.get('authorization'));
  if (!key) {
    throw new StripeApiError(401, {
      type: 'invalid_request_error',
      message:
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
    });
  }
  const [account] = await db.select().from(accounts).where(eq(accounts.secretKey, key));
  if (!account) {
    throw new StripeApiError(401, {
      type: 'invalid_request_error',
      code: 'api_key_invalid',
      message: `Invalid API Key provided: ${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`,
    });
  }
  return account;
}

function secretKeyOf(header: string | null): string | undefined {
  if (!header) return undefined;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value.trim();
  if (scheme?.toLowerCase() === 'basic') {
    return Buffer.from(value, 'base64').toString().split(':', 1)[0] || undefined;
  }
  return undefined;
}
