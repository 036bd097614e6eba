import type { Database } from '@once/api';
import { resolveEventTenant } from '@once/api/webhooks';
import { refunds } from '@once/db/schema';
import { computeFingerprint } from '@once/idempotency';
import { canRecordRefund, refundStatusOfProcessor } from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import { and, eq } from 'drizzle-orm';
import type Stripe from 'stripe';
import { findRecordedIntent, type ProcessorFor } from './processor-webhook-intent.ts';
import type { WebRuntime } from './runtime.ts';

/**
 * The events of a refund's life as Stripe sends them: `refund.created` (a refund was made,
 * maybe `pending`), `refund.updated` (its status changed: a pending one succeeded),
 * `refund.failed` (it failed, even after succeeding: the money came back), each with the
 * Refund; and `charge.refunded` with the Charge (its `amount_refunded`, no list of refunds in
 * current API versions).
 */
const REFUND_EVENT_TYPES = [
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refunded',
] as const;

export const isRefundEventType = (type: string): boolean =>
  (REFUND_EVENT_TYPES as readonly string[]).includes(type);

const OPERATION = 'webhooks.processor';

/** One refund the event moved. */
interface RefundMove {
  refundId: string;
  from: string;
  to: string;
}

/** What the receiver reads of the Refund or Charge an event carries (a hint only). */
interface RefundEventObject {
  payment_intent?: string | null;
  metadata?: Record<string, string> | null;
}

/** The processor Refund fields recorded. */
type ProcessorRefund = Pick<Stripe.Refund, 'id' | 'status' | 'failure_reason' | 'metadata'>;

const answer = (status: number, body: Record<string, unknown>, headers: HeadersInit = {}) =>
  Response.json(body, { status, headers });

/**
 * A refund event as a hint, like a PaymentIntent one: the payment it names must have recorded
 * the intent the object names, and what is recorded is what the processor answers when asked
 * for that intent's refunds (`refunds.list`), never the body. Every refund of the payment the
 * processor shows (matched by the refund id the worker put in its metadata) moves as the
 * refund lifecycle allows (@once/payments `canRecordRefund`: a late `refund.updated` never
 * undoes a `failed`), in one transaction that stores the answer under the event id: a
 * redelivery is answered from the store and moves nothing.
 *
 * @example
 * if (isRefundEventType(event.type)) return applyRefundEvent(event, { deps, processorFor });
 */
export async function applyRefundEvent(
  event: Stripe.Event,
  context: { deps: WebRuntime['deps']; processorFor: ProcessorFor | undefined },
): Promise<Response> {
  const { deps } = context;
  const object = event.data.object as RefundEventObject;
  const tenantId = await resolveEventTenant(deps.db, {
    account: (event as { account?: string }).account ?? null,
    metadata: object.metadata ?? null,
  });
  if (!tenantId) return answer(200, { received: true, ignored: 'unknown_tenant' });
  const paymentId = object.metadata?.payment_id;
  const recorded = paymentId ? await findRecordedIntent(deps.db, tenantId, paymentId) : undefined;
  if (!recorded?.intentId || recorded.intentId !== object.payment_intent) {
    console.log(
      `web: webhook ${event.id} ${event.type} ignored: intent ${object.payment_intent ?? '(none)'} is not the one recorded on payment ${paymentId ?? '(none named)'}`,
    );
    return answer(200, { received: true, ignored: 'not_the_recorded_intent' });
  }
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
  const outcome = await deps.idempotencyEngine.execute(
    {
      tenantId,
      operation: OPERATION,
      key: event.id,
      fingerprint: computeFingerprint(OPERATION, { id: event.id, type: event.type }),
      // Signed by our processor: the per-tenant new-key limit is for clients spraying keys.
      policy: { rateLimited: false },
    },
    (exec) =>
      retrySerializationFailures(() =>
        deps.db.transaction(async (tx) => {
          const moved = await recordProcessorRefunds(tx, tenantId, recorded.paymentId, listed);
          const response = {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ received: true, eventId: event.id, moved }),
          };
          await exec.complete(tx, response);
          console.log(
            `web: webhook ${event.id} ${event.type} tenant=${tenantId} -> ${moved.length === 0 ? 'no refund moved' : moved.map((m) => `${m.refundId} ${m.from}->${m.to}`).join(', ')}`,
          );
          return response;
        }),
      ),
  );
  const headers = new Headers(outcome.response.headers);
  if (outcome.kind === 'replayed') headers.set('idempotent-replayed', 'true');
  return new Response(outcome.response.body, { status: outcome.response.status, headers });
}

/**
 * Moves each of the payment's refunds to the status the processor shows for it, under the
 * refunds' row locks, where the lifecycle allows; the same rule guards the worker's writes.
 */
async function recordProcessorRefunds(
  tx: Parameters<Parameters<Database['transaction']>[0]>[0],
  tenantId: string,
  paymentId: string,
  listed: ProcessorRefund[],
): Promise<RefundMove[]> {
  const rows = await tx
    .select({
      id: refunds.id,
      status: refunds.status,
      processorRefundId: refunds.processorRefundId,
    })
    .from(refunds)
    .where(and(eq(refunds.tenantId, tenantId), eq(refunds.paymentId, paymentId)))
    .for('update');
  const moved: RefundMove[] = [];
  for (const row of rows) {
    const found = listed.find(
      (r) => r.metadata?.refund_id === row.id || r.id === row.processorRefundId,
    );
    const to = refundStatusOfProcessor(found?.status);
    if (!found || !to || to === row.status || !canRecordRefund(row.status, to)) continue;
    await tx
      .update(refunds)
      .set({
        status: to,
        processorRefundId: found.id,
        failureCode: to === 'failed' ? (found.failure_reason ?? 'refund_failed') : null,
        failureMessage: null,
        updatedAt: new Date(),
      })
      .where(and(eq(refunds.tenantId, tenantId), eq(refunds.id, row.id)));
    moved.push({ refundId: row.id, from: row.status, to });
  }
  return moved;
}
