import type { HttpBindings } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import type { MutatingOperation, ReadOperationName } from '../faults/fault-kinds.ts';
import { lagObject, takeReadFault, takeRequestFault } from '../faults/fault-store.ts';
import { cancelPaymentIntent } from '../payments/cancel-payment-intent.ts';
import { confirmPaymentIntent } from '../payments/confirm-payment-intent.ts';
import { createPaymentIntent } from '../payments/create-payment-intent.ts';
import {
  listPaymentIntents,
  retrievePaymentIntent,
  searchPaymentIntents,
} from '../payments/read-payment-intents.ts';
import { createRefund, retrieveRefund } from '../refunds/create-refund.ts';
import { authenticate } from './authenticate.ts';
import { parseFormParams } from './form-params.ts';
import type { IdempotentMutation } from './idempotent-mutation.ts';
import { StripeApiError, stripeErrorResponse } from './stripe-error.ts';
import type { ReadOperation, StripeOperation, StripeResult } from './stripe-operation.ts';
import { stripeResponse } from './stripe-response.ts';

export interface StripeApiOptions {
  db: ProcessorDatabase;
  idempotentMutation: IdempotentMutation;
  log: (line: string) => void;
}

type Env = { Bindings: Partial<HttpBindings> };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The Stripe-compatible REST surface (`/v1/...`): authentication, form decoding, fault
 * injection around each request, and idempotent, transactional mutations.
 *
 * @example
 * app.route('/', createStripeApi({ db, idempotentMutation, log: console.log }));
 */
export function createStripeApi(options: StripeApiOptions): Hono<Env> {
  const { db, log } = options;
  const app = new Hono<Env>();

  // Each route names its operation (`payment_intents.confirm`): what a fault's `operation` matches.
  const read = (name: ReadOperationName, operation: ReadOperation) => async (c: Context<Env>) => {
    const account = await authenticate(db, c.req.raw);
    const url = new URL(c.req.url);
    if (await takeReadFault(db, account.id, url.pathname, name)) {
      log(`fault not_found on GET ${url.pathname} ${account.id}`);
      throw new StripeApiError(404, {
        type: 'invalid_request_error',
        code: 'resource_missing',
        message: 'Injected fault: not_found (the object exists; this read was misrouted).',
      });
    }
    const params = parseFormParams(url.search.slice(1));
    const result = await operation(db, {
      account,
      params,
      pathParams: c.req.param() as Record<string, string>,
      idempotencyKey: null,
    });
    return stripeResponse(result);
  };

  const mutate =
    (name: MutatingOperation, operation: StripeOperation) => async (c: Context<Env>) => {
      const request = c.req.raw;
      const account = await authenticate(db, request);
      const params = parseFormParams(await c.req.text());
      const path = new URL(request.url).pathname;
      const idempotencyKey = request.headers.get('idempotency-key');
      const fault = await takeRequestFault(db, account.id, request.method, path, name);
      const label = `${request.method} ${path} ${account.id} key=${idempotencyKey ?? '-'}`;
      if (fault) log(`fault ${fault.kind} on ${label}`);

      if (fault?.kind === 'fail_before_charge') {
        throw new StripeApiError(500, {
          type: 'api_error',
          message: 'Injected fault: fail_before_charge (nothing was charged).',
        });
      }

      const response = await options.idempotentMutation(
        request,
        { accountId: account.id, params },
        async (exec) => {
          // Inside the key's lease: a retry arriving now sees it in progress (409).
          if (fault?.kind === 'delay' && fault.when === 'before_charge') await sleep(fault.delayMs);
          return db.transaction(async (tx) => {
            const result = await operation(tx, {
              account,
              params,
              pathParams: c.req.param() as Record<string, string>,
              idempotencyKey,
            });
            if (fault && fault.lagMs > 0 && fault.kind !== 'fail_before_charge') {
              await lagBehind(tx, account.id, result, fault.lagMs);
            }
            const rendered = stripeResponse(result);
            // `complete` reads `rendered` for the store; the guard sends the same status, headers and body.
            await exec.complete(tx, rendered);
            return rendered;
          });
        },
      );
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      log(`${label} -> ${response.status}${replayed ? ' (replayed)' : ''}`);

      if (fault?.kind === 'charge_then_drop') {
        // The work is committed; the client never learns it. Destroying the socket gives
        // the client a connection reset, the most ambiguous failure a network has.
        c.env?.incoming?.socket.destroy();
        return new Response(null, { status: 500 });
      }
      if (fault?.kind === 'fail_after_charge') {
        return stripeErrorResponse(
          new StripeApiError(500, {
            type: 'api_error',
            message: 'Injected fault: fail_after_charge (the request was processed).',
          }),
        );
      }
      if (fault?.kind === 'delay' && fault.when === 'after_charge') await sleep(fault.delayMs);
      return response;
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
  app.post('/v1/refunds', mutate('refunds.create', createRefund));
  app.get('/v1/refunds/:id', read('refunds.retrieve', retrieveRefund));
  return app;
}

/** Where each object kind is read by id: the path its `lag_ms` hides. */
const READ_PATH_OF: Record<string, string> = {
  payment_intent: '/v1/payment_intents/',
  refund: '/v1/refunds/',
};

/** Starts the lag of an object a faulted request changed (see `lagObject`). */
async function lagBehind(
  tx: ProcessorTransaction,
  accountId: string,
  result: StripeResult,
  lagMs: number,
): Promise<void> {
  const body = result.body as { id?: unknown; object?: unknown } | null;
  const base = typeof body?.object === 'string' ? READ_PATH_OF[body.object] : undefined;
  if (result.status !== 200 || typeof body?.id !== 'string' || !base) return;
  await lagObject(tx, { accountId, path: `${base}${body.id}`, objectId: body.id, lagMs });
}
