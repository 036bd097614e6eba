import { findIntentNamedBy, recordRefundEventOnce } from '@once/api/webhooks';
import type { ProcessorRefund } from '@once/payments';
import type Stripe from 'stripe';
import type { ProcessorFor } from './processor-clients.ts';
import type { WebRuntime } from './runtime.ts';

const answer = (status: number, body: Record<string, unknown>, headers: HeadersInit = {}) =>
  Response.json(body, { status, headers });

/**
 * A refund event (@once/payments `isRefundEventType`) as a hint, like a PaymentIntent one:
 * the payment it names must have recorded the intent the object names, and what is recorded
 * is what the processor answers when asked for that intent's refunds (`refunds.list`), never
 * the body. Every refund of the payment the processor shows moves as the refund lifecycle
 * allows (@once/payments `recordProcessorRefunds`), in one transaction that stores the answer
 * under the event id (@once/api/webhooks `recordRefundEventOnce`): a redelivery is answered
 * from the store and moves nothing.
 *
 * @example
 * if (isRefundEventType(event.type)) return applyRefundEvent(event, { deps, processorFor });
 */
export async function applyRefundEvent(
  event: Stripe.Event,
  context: { deps: WebRuntime['deps']; processorFor: ProcessorFor | undefined },
): Promise<Response> {
  const { deps } = context;
  const named = await findIntentNamedBy(deps.db, event as Parameters<typeof findIntentNamedBy>[1]);
  if (named.kind === 'unknown_tenant') {
    return answer(200, { received: true, ignored: 'unknown_tenant' });
  }
  if (named.kind === 'not_the_recorded_intent') {
    console.log(
      `web: webhook ${event.id} ${event.type} ignored: intent ${named.intentId ?? '(none)'} is not the one recorded on payment ${named.paymentId ?? '(none named)'}`,
    );
    return answer(200, { received: true, ignored: 'not_the_recorded_intent' });
  }
  const { tenantId, recorded } = named;
  if (!context.processorFor) {
    return answer(503, { code: 'processor_unconfigured' }, { 'retry-after': '5' });
  }
  let listed: ProcessorRefund[];
  try {
    const page = await context.processorFor(recorded.secretKey).refunds.list({
      payment_intent: recorded.intentId,
      limit: 100,
    });
    listed = page.data;
  } catch (error) {
    console.log(
      `web: webhook ${event.id} ${event.type} not applied: listing the refunds of ${recorded.intentId} failed (${error instanceof Error ? error.message : String(error)}); answered 503, the processor delivers again`,
    );
    return answer(503, { code: 'processor_unavailable' }, { 'retry-after': '5' });
  }
  const once = await recordRefundEventOnce(deps, tenantId, event, recorded.paymentId, listed);
  if (!once.replayed) {
    console.log(
      `web: webhook ${event.id} ${event.type} tenant=${tenantId} -> ${once.result.length === 0 ? 'no refund moved' : once.result.map((m) => `${m.refundId} ${m.from}->${m.to}`).join(', ')}`,
    );
  }
  const headers = new Headers(once.response.headers);
  if (once.replayed) headers.set('idempotent-replayed', 'true');
  return new Response(once.response.body, { status: once.response.status, headers });
}
