import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { StripeApiError, stripeErrorResponse } from '../stripe/stripe-error.ts';
import type { StripeResult } from '../stripe/stripe-operation.ts';
import {
  LIMIT_FAULT_KINDS,
  type MutatingOperation,
  READ_FAULT_KINDS,
  REQUEST_FAULT_KINDS,
  type ReadOperationName,
  WEBHOOK_DELIVERY_OPERATION,
  type WebhookFaultKind,
} from './fault-kinds.ts';
import { lagObject, markFaultApplied, recordUseObject, takeFault } from './fault-store.ts';

// Where every armed fault acts; the routes and the webhook deliverer call these points and
// know no fault by name. A fault is taken when a request matches it, and applied
// (`fault_uses.applied_at`) when its effect happened; a fault acting on the answer only when
// this request's own work committed (a replay answered 500 by `fail_after_charge` charged nothing).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const MUTATION_FAULT_KINDS = [...REQUEST_FAULT_KINDS, ...LIMIT_FAULT_KINDS];

/** Where each object kind is read by id: the path its `lag_ms` hides. */
const READ_PATH_OF: Record<string, string> = {
  payment_intent: '/v1/payment_intents/',
  refund: '/v1/refunds/',
};

/**
 * Takes the fault armed for this mutation, once, before it runs (a replay is hit like a first
 * request). Its points run in order: before the key layer (refusals: the key stays untouched),
 * inside the key's lease, inside the work's transaction, and on the committed answer.
 */
export async function takeRequestFaults(
  db: ProcessorDatabase,
  request: {
    accountId: string;
    method: string;
    path: string;
    operation: MutatingOperation;
    idempotencyKey: string | null;
    /** The object the path names; null: a create. */
    objectId: string | null;
    label: string;
  },
  log: (line: string) => void,
) {
  const { accountId, method, path, operation, idempotencyKey, objectId } = request;
  const fault = await takeFault(
    db,
    { accountId, kinds: MUTATION_FAULT_KINDS, method, subject: path, operation },
    { operation, idempotencyKey, objectId },
  );
  if (fault) log(`fault ${fault.kind} on ${request.label}`);
  const applied = () => (fault ? markFaultApplied(db, fault.useId) : Promise.resolve());
  // This request's work succeeded in its transaction (set there; read once it committed).
  let workDone = false;
  return {
    async beforeKeyLayer() {
      if (fault?.kind === 'fail_before_charge') {
        await applied();
        throw new StripeApiError(500, {
          type: 'api_error',
          message: 'Injected fault: fail_before_charge (nothing was charged).',
        });
      }
      if (fault?.kind === 'rate_limit' || fault?.kind === 'lock_timeout') {
        await applied();
        throw limitRefusal(fault.kind);
      }
    },
    async beforeWork() {
      if (fault?.kind === 'delay' && fault.when === 'before_charge') {
        // Its effect is the hold itself: counted when the hold begins, so a client that gives
        // up during it (what a delay past its timeout is for) still finds it counted.
        await applied();
        await sleep(fault.delayMs);
      }
    },
    /** Inside the work's transaction: names the object a create made, starts its `lag_ms`. */
    async afterWork(tx: ProcessorTransaction, account: string, result: StripeResult) {
      if (!fault) return;
      workDone = result.status === 200;
      const body = result.body as { id?: unknown; object?: unknown } | null;
      const id = workDone && typeof body?.id === 'string' ? body.id : null;
      if (!id) return;
      if (objectId === null) await recordUseObject(tx, fault.useId, id);
      const readPath = typeof body?.object === 'string' ? READ_PATH_OF[body.object] : undefined;
      if (fault.lagMs > 0 && readPath) {
        const lag = { accountId: account, path: `${readPath}${id}`, objectId: id };
        await lagObject(tx, { ...lag, lagMs: fault.lagMs });
      }
    },
    /**
     * A held answer counts when the hold begins (the client may give up during it); a
     * dropped or failed answer once it is sent. Either only when the work was done.
     */
    async answer(response: Response, socket: { destroy(): void } | undefined) {
      const done = () => (workDone ? applied() : Promise.resolve());
      if (fault?.kind === 'delay' && fault.when === 'after_charge') {
        await done();
        await sleep(fault.delayMs);
      } else if (fault?.kind === 'charge_then_drop') {
        // The work is committed; the client never learns it. Destroying the socket gives
        // the client a connection reset, the most ambiguous failure a network has. Counted
        // first, so a client that reads the counts after its reset finds this one.
        await done();
        socket?.destroy();
        return new Response(null, { status: 500 });
      } else if (fault?.kind === 'fail_after_charge') {
        const failed = stripeErrorResponse(
          new StripeApiError(500, {
            type: 'api_error',
            message: 'Injected fault: fail_after_charge (the request was processed).',
          }),
        );
        await done();
        return failed;
      }
      return response;
    },
  };
}

/**
 * A 429 as Stripe's limiters send it: they run before its idempotency layer, so the key stays
 * unused. Only `lock_timeout` carries `Stripe-Should-Retry: true` (stripe-node retries a 429
 * only then: Stripe's SDKs retry lock timeouts, not rate limits); `rate_limit` keeps its code
 * so a client can tell the two apart.
 */
function limitRefusal(code: 'rate_limit' | 'lock_timeout'): StripeApiError {
  const message = {
    lock_timeout:
      'This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate.',
    rate_limit:
      'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
  }[code];
  const shouldRetry = code === 'lock_timeout' ? true : undefined;
  return new StripeApiError(429, { type: 'invalid_request_error', code, message }, shouldRetry);
}

/**
 * Before a read runs: a `not_found` fault armed for it (or the lag of an object) answers
 * 404 `resource_missing` for an object that exists. Nothing else applies to a read, so a
 * reconciler's GETs never use up a fault meant for a charge.
 */
export async function applyReadFault(
  db: ProcessorDatabase,
  read: {
    accountId: string;
    path: string;
    operation: ReadOperationName;
    /** The object the path names (`pi_...`); null: a list or search. */
    objectId: string | null;
  },
  log: (line: string) => void,
): Promise<void> {
  const { accountId, path, operation, objectId } = read;
  const fault = await takeFault(
    db,
    { accountId, kinds: READ_FAULT_KINDS, method: 'GET', subject: path, operation },
    { operation, idempotencyKey: null, objectId },
  );
  if (!fault) return;
  await markFaultApplied(db, fault.useId);
  log(`fault not_found on GET ${path} ${accountId}`);
  throw new StripeApiError(404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: 'Injected fault: not_found (the object exists; this read was misrouted).',
  });
}

/**
 * Takes the webhook faults armed for this event's delivery: `slow_webhook` waits before the
 * first POST, `duplicate_webhook` POSTs the same bytes twice (applied once both were sent).
 */
export async function takeDeliveryFaults(
  db: ProcessorDatabase,
  event: { accountId: string; eventId: string; eventType: string },
  log: (line: string) => void,
) {
  const take = (kind: WebhookFaultKind) =>
    takeFault(
      db,
      {
        accountId: event.accountId,
        kinds: [kind],
        method: null,
        subject: event.eventType,
        operation: null,
      },
      { operation: WEBHOOK_DELIVERY_OPERATION, idempotencyKey: null, objectId: event.eventId },
    );
  const duplicate = await take('duplicate_webhook');
  const slow = await take('slow_webhook');
  return {
    async beforeSend() {
      if (!slow) return;
      log(`webhooks: slow_webhook ${event.eventId} waits ${slow.delayMs} ms`);
      await sleep(slow.delayMs);
      await markFaultApplied(db, slow.useId);
    },
    copies: duplicate ? 2 : 1,
    /** After every copy was sent. */
    async afterSend() {
      if (duplicate) await markFaultApplied(db, duplicate.useId);
    },
  };
}
