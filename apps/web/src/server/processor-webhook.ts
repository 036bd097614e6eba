import {
  type ApplyOutcome,
  applyProcessorEvent,
  checkoutProblemResponse,
  handledProcessorEventTypes,
  isCheckoutError,
  type ProcessorPaymentIntentEvent,
  resolveEventTenant,
} from '@once/api';
import { computeFingerprint, isIdempotencyError } from '@once/idempotency';
import { problemDetailsResponse } from '@once/idempotency/fetch';
import Stripe from 'stripe';
import { readTextWithinLimit, WEBHOOK_MAX_BODY_BYTES } from './body-limit.ts';
import type { WebRuntime } from './runtime.ts';

const OPERATION = 'webhooks.processor';

function problem(status: number, code: string, title: string): Response {
  return Response.json(
    { type: `https://once.dev/problems/${code}`, title, status, code },
    { status, headers: { 'content-type': 'application/problem+json' } },
  );
}

function accepted(body: Record<string, unknown>): Response {
  return Response.json({ received: true, ...body });
}

/**
 * `POST /api/webhooks/processor`: verifies `Stripe-Signature` with the official SDK (raw
 * body, PROCESSOR_WEBHOOK_SECRET, default 5-minute tolerance), then applies
 * `payment_intent.succeeded` / `payment_intent.payment_failed` exactly once per event id:
 * the event id is an idempotency key (tenant-scoped, operation `webhooks.processor`), and
 * its stored answer commits in the same transaction as the payment update. A redelivery
 * gets the stored answer with `Idempotent-Replayed: true` and changes nothing.
 *
 * Answers: 400 bad signature; 200 applied / duplicate / ignored (not ours, other types);
 * 409 + Retry-After while the same event is being applied; 503 when the store is down
 * (the processor retries both).
 *
 * @example
 * export const POST = createProcessorWebhookHandler(getWebRuntime);
 */
export function createProcessorWebhookHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (request: Request): Promise<Response> => {
    const { deps, webhookSecret } = await getRuntime();
    if (!webhookSecret) {
      return problem(503, 'webhook_secret_unset', 'PROCESSOR_WEBHOOK_SECRET is not configured');
    }
    // Bounded before parsing or verifying: 413 by Content-Length or by a counted read.
    let payload: string;
    try {
      payload = await readTextWithinLimit(request, WEBHOOK_MAX_BODY_BYTES);
    } catch (error) {
      if (isCheckoutError(error)) return checkoutProblemResponse(error);
      throw error;
    }
    let event: Stripe.Event;
    try {
      event = Stripe.webhooks.constructEvent(
        payload,
        request.headers.get('stripe-signature') ?? '',
        webhookSecret,
      );
    } catch {
      return problem(400, 'invalid_signature', 'Stripe-Signature does not verify');
    }
    if (!handledProcessorEventTypes.includes(event.type)) {
      return accepted({ ignored: 'unhandled_type' });
    }
    const intentEvent = event as unknown as ProcessorPaymentIntentEvent & { account?: string };
    const tenantId = await resolveEventTenant(deps.db, {
      account: intentEvent.account ?? null,
      metadata: intentEvent.data.object.metadata ?? null,
    });
    if (!tenantId) {
      console.log(`web: webhook ${event.id} ${event.type} ignored: no tenant`);
      return accepted({ ignored: 'unknown_tenant' });
    }

    try {
      const outcome = await deps.idempotencyEngine.execute(
        {
          tenantId,
          operation: OPERATION,
          key: event.id,
          fingerprint: computeFingerprint(OPERATION, { id: event.id, type: event.type }),
          // Signed by our processor and proportional to our own checkouts: the per-tenant
          // new-key limit is there to stop clients spraying keys, not to drop outcomes.
          policy: { rateLimited: false },
        },
        (exec) =>
          deps.db.transaction(async (tx) => {
            const applied: ApplyOutcome = await applyProcessorEvent(tx, tenantId, intentEvent);
            const response = {
              status: 200,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ received: true, eventId: event.id, outcome: applied }),
            };
            await exec.complete(tx, response);
            console.log(
              `web: webhook ${event.id} ${event.type} tenant=${tenantId} -> ${applied.kind}${'status' in applied ? ` ${applied.status}` : ''}`,
            );
            return response;
          }),
      );
      const headers = new Headers(outcome.response.headers);
      if (outcome.kind === 'replayed') headers.set('idempotent-replayed', 'true');
      return new Response(outcome.response.body, { status: outcome.response.status, headers });
    } catch (error) {
      if (isIdempotencyError(error)) return problemDetailsResponse(error);
      throw error;
    }
  };
}
