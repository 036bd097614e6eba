import { apiProblemResponse, isApiError } from '@once/api/errors';
import {
  findIntentNamedBy,
  type RecordedOnce,
  recordIntentEventOnce,
  recordRefundEventOnce,
} from '@once/api/webhooks';
import { isIdempotencyError } from '@once/idempotency';
import { problemDetailsResponse } from '@once/idempotency/fetch';
import { confirmedEventOf, handledProcessorEventTypes, isRefundEventType } from '@once/payments';
import Stripe from 'stripe';
import { readTextWithinLimit, WEBHOOK_MAX_BODY_BYTES } from './body-limit.ts';
import { type ProcessorFor, processorClientsFrom } from './processor-clients.ts';
import type { WebRuntime } from './runtime.ts';
import {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  describeSkew,
  signatureSkewSeconds,
  WEBHOOK_SKEW_LOG_THRESHOLD_SECONDS,
} from './webhook-clock-skew.ts';

/** A refusal as problem+json; `retry` adds Retry-After (the processor will deliver again). */
function problem(status: number, code: string, title: string, retry = false): Response {
  return Response.json(
    { type: `https://once.dev/problems/${code}`, title, status, code },
    {
      status,
      headers: {
        'content-type': 'application/problem+json',
        ...(retry ? { 'retry-after': '5' } : {}),
      },
    },
  );
}

function accepted(body: Record<string, unknown>): Response {
  return Response.json({ received: true, ...body });
}

/**
 * `POST /api/webhooks/processor`: verifies `Stripe-Signature` with the official SDK, then applies
 * the payment-intent and refund events exactly once per event id: the event id is an idempotency
 * key whose stored answer commits in the same transaction as the payment update, so a redelivery
 * is replayed and changes nothing.
 *
 * A signature proves only who sent the body, so the body is a hint, never the outcome
 * (docs/threat-model.md): the event must name the intent recorded on its payment (else 200,
 * ignored), and the payment is settled from that intent as the processor returns it when asked.
 * Webhooks only make the page update sooner: the worker and the reconciler settle every payment.
 */
export function createProcessorWebhookHandler(
  getRuntime: () => Promise<WebRuntime>,
  options: {
    /** The processor to ask about an intent; default: the one at PROCESSOR_URL. */
    processorFor?: ProcessorFor;
  } = {},
) {
  let processorFor = options.processorFor;
  return async (request: Request): Promise<Response> => {
    const { deps, webhookSecret, webhookToleranceSeconds } = await getRuntime();
    if (!webhookSecret) {
      return problem(503, 'webhook_secret_unset', 'PROCESSOR_WEBHOOK_SECRET is not configured');
    }
    const tolerance = webhookToleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
    // Bounded before parsing or verifying: 413 by Content-Length or by a counted read.
    let payload: string;
    try {
      payload = await readTextWithinLimit(request, WEBHOOK_MAX_BODY_BYTES);
    } catch (error) {
      if (isApiError(error)) return apiProblemResponse(error);
      throw error;
    }
    const signature = request.headers.get('stripe-signature') ?? '';
    // One reading of the clock for both the check and the log, so they always agree.
    const nowMs = deps.clock.now().getTime();
    const skew = signatureSkewSeconds(signature, nowMs);
    let event: Stripe.Event;
    try {
      event = Stripe.webhooks.constructEvent(
        payload,
        signature,
        webhookSecret,
        tolerance,
        undefined,
        nowMs,
      );
    } catch (error) {
      const stale = error instanceof Error && /tolerance zone/i.test(error.message);
      console.log(
        `web: webhook refused: ${stale ? 'timestamp outside the tolerance' : 'signature does not verify'}; ${describeSkew(skew)} (tolerance ${tolerance} s, ONCE_WEBHOOK_TOLERANCE_SECONDS)${stale ? '; check the clocks (NTP) of the processor and this host; payments still settle through the worker' : ''}`,
      );
      return stale
        ? problem(
            400,
            'webhook_timestamp_outside_tolerance',
            `Stripe-Signature timestamp is more than ${tolerance} s old by this host's clock`,
          )
        : problem(400, 'invalid_signature', 'Stripe-Signature does not verify');
    }
    if (skew !== undefined && Math.abs(skew) > WEBHOOK_SKEW_LOG_THRESHOLD_SECONDS) {
      console.log(
        `web: webhook ${event.id} accepted with clock skew: ${describeSkew(skew)} (tolerance ${tolerance} s)`,
      );
    }
    if (!isRefundEventType(event.type) && !handledProcessorEventTypes.includes(event.type)) {
      return accepted({ ignored: 'unhandled_type' });
    }
    processorFor ??= processorClientsFrom(process.env);
    try {
      return await applyEvent(event, deps, processorFor);
    } catch (error) {
      if (error instanceof ProcessorUnavailable) {
        return problem(503, 'processor_unavailable', PROCESSOR_UNAVAILABLE, true);
      }
      if (isIdempotencyError(error)) return problemDetailsResponse(error);
      throw error;
    }
  };
}

const PROCESSOR_UNAVAILABLE =
  'The processor could not be asked about this intent; deliver again later';

/** A verified event of a handled type, applied once as described above. */
async function applyEvent(
  event: Stripe.Event,
  deps: WebRuntime['deps'],
  processorFor: ProcessorFor | undefined,
): Promise<Response> {
  const said = (what: string) => console.log(`web: webhook ${event.id} ${event.type} ${what}`);
  const named = await findIntentNamedBy(deps.db, event as Parameters<typeof findIntentNamedBy>[1]);
  if (named.kind === 'unknown_tenant') {
    said('ignored: no tenant');
    return accepted({ ignored: 'unknown_tenant' });
  }
  if (named.kind === 'not_the_recorded_intent') {
    const { recorded } = named;
    said(
      `ignored: intent ${named.intentId ?? '(none)'} is not the one recorded on payment ${named.paymentId ?? '(none named)'} (${recorded ? (recorded.intentId ?? 'none recorded yet') : 'no such payment'})`,
    );
    return accepted({ ignored: 'not_the_recorded_intent' });
  }
  const { tenantId, recorded } = named;
  if (!processorFor) {
    return problem(503, 'processor_unconfigured', 'PROCESSOR_URL is not configured', true);
  }
  const processor = processorFor(recorded.secretKey);
  let once: RecordedOnce<unknown>;
  if (isRefundEventType(event.type)) {
    const listed = await askProcessor(event, `listing the refunds of ${recorded.intentId}`, () =>
      processor.refunds.list({ payment_intent: recorded.intentId, limit: 100 }),
    );
    const moved = await recordRefundEventOnce(
      deps,
      tenantId,
      event,
      recorded.paymentId,
      listed.data,
    );
    if (!moved.replayed) {
      const words = moved.result.map((m) => `${m.refundId} ${m.from}->${m.to}`).join(', ');
      said(`tenant=${tenantId} -> ${words || 'no refund moved'}`);
    }
    once = moved;
  } else {
    const intent = await askProcessor(event, `retrieving ${recorded.intentId}`, () =>
      processor.paymentIntents.retrieve(recorded.intentId),
    );
    const confirmed = confirmedEventOf(event.id, intent, {
      tenantId,
      paymentId: recorded.paymentId,
    });
    if (!confirmed) {
      said(`ignored: the processor says ${intent.id} is ${intent.status}, nothing to settle`);
      return accepted({ ignored: 'intent_not_final' });
    }
    const applied = await recordIntentEventOnce(deps, tenantId, event, confirmed);
    if (!applied.replayed) {
      const { result } = applied;
      said(`tenant=${tenantId} -> ${result.kind}${'status' in result ? ` ${result.status}` : ''}`);
    }
    once = applied;
  }
  const headers = new Headers(once.response.headers);
  if (once.replayed) headers.set('idempotent-replayed', 'true');
  return new Response(once.response.body, { status: once.response.status, headers });
}

/** The processor did not answer a webhook's question: 503, and it delivers again later. */
class ProcessorUnavailable extends Error {}

async function askProcessor<T>(event: Stripe.Event, asking: string, ask: () => Promise<T>) {
  try {
    return await ask();
  } catch (error) {
    console.log(
      `web: webhook ${event.id} ${event.type} not applied: ${asking} failed (${error instanceof Error ? error.message : String(error)}); answered 503, the processor delivers again`,
    );
    throw new ProcessorUnavailable(asking);
  }
}
