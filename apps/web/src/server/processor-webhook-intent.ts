import { type Database, readApiEnv } from '@once/api';
import type { ProcessorPaymentIntentEvent } from '@once/payments';
import Stripe from 'stripe';

// What a processor webhook is trusted for: a hint that one of OUR recorded PaymentIntents
// may have settled. Anyone holding the webhook secret can sign any body, so nothing in the
// body is believed: the payment is the one whose recorded intent the event names, and its
// outcome is what the processor answers when asked for that intent (Stripe: an event's
// object is the state "at the time of the change"; fetch the resource for its current
// state before acting).

/** The SDK for a tenant's secret key, pointed at the processor. */
export type ProcessorFor = (secretKey: string) => Stripe;

/** What the receiver needs to know about the payment an event names. */
export interface RecordedIntent {
  paymentId: string;
  /** The intent the worker recorded before confirming it (step A); null: none sent yet. */
  intentId: string | null;
  /** The tenant's processor key, to ask the processor about that intent. */
  secretKey: string;
}

/**
 * The payment an event names (by its `payment_id` metadata, a hint) with its recorded
 * intent, or undefined when the tenant has no such payment.
 *
 * @example
 * const recorded = await findRecordedIntent(deps.db, 'tenant_a', 'pay_1');
 */
export async function findRecordedIntent(
  db: Database,
  tenantId: string,
  paymentId: string,
): Promise<RecordedIntent | undefined> {
  const payment = await db.query.payments.findFirst({
    columns: { id: true, processorPaymentIntentId: true },
    where: (row, { and, eq }) => and(eq(row.tenantId, tenantId), eq(row.id, paymentId)),
  });
  if (!payment) return undefined;
  const tenant = await db.query.tenants.findFirst({
    columns: { processorSecretKey: true },
    where: (row, { eq }) => eq(row.id, tenantId),
  });
  if (!tenant) return undefined;
  return {
    paymentId: payment.id,
    intentId: payment.processorPaymentIntentId,
    secretKey: tenant.processorSecretKey,
  };
}

/**
 * The event to apply, built from the intent the processor returned (its status, amount,
 * currency and error) for OUR payment (its id and tenant from our records, not from the
 * processor's metadata), or undefined while the intent is not final (nothing to settle:
 * the worker and the reconciler finish it). A failed charge leaves the intent waiting for
 * another payment method with the error that declined it, as the worker reads it.
 *
 * @example
 * confirmedEventOf('evt_1', retrieved, { tenantId: 'tenant_a', paymentId: 'pay_1' });
 */
export function confirmedEventOf(
  eventId: string,
  intent: Stripe.PaymentIntent,
  ours: { tenantId: string; paymentId: string },
): ProcessorPaymentIntentEvent | undefined {
  const declined =
    (intent.status === 'requires_payment_method' || intent.status === 'canceled') &&
    intent.last_payment_error;
  if (intent.status !== 'succeeded' && !declined) return undefined;
  return {
    id: eventId,
    type:
      intent.status === 'succeeded' ? 'payment_intent.succeeded' : 'payment_intent.payment_failed',
    data: {
      object: {
        id: intent.id,
        amount: intent.amount,
        currency: intent.currency,
        metadata: { payment_id: ours.paymentId, tenant_id: ours.tenantId },
        last_payment_error: intent.last_payment_error
          ? {
              code: intent.last_payment_error.code ?? null,
              decline_code: intent.last_payment_error.decline_code ?? null,
              message: intent.last_payment_error.message ?? null,
            }
          : null,
      },
    },
  };
}

/** One answer is all a webhook waits for: a slow processor means 503, and a redelivery. */
const RETRIEVE_TIMEOUT_MS = 5_000;

/**
 * SDK clients for the processor at PROCESSOR_URL (one per tenant key), or undefined when
 * it is not set: then no webhook can be confirmed and each is answered 503.
 *
 * @example
 * const processorFor = processorClientsFrom(process.env);
 */
export function processorClientsFrom(
  env: Record<string, string | undefined>,
): ProcessorFor | undefined {
  const { processorUrl } = readApiEnv(env);
  if (!processorUrl) return undefined;
  const url = new URL(processorUrl);
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  const clients = new Map<string, Stripe>();
  return (secretKey) => {
    let client = clients.get(secretKey);
    if (!client) {
      client = new Stripe(secretKey, {
        host: url.hostname,
        port: url.port || (protocol === 'https' ? 443 : 80),
        protocol,
        timeout: RETRIEVE_TIMEOUT_MS,
        // The processor redelivers a webhook answered non-2xx: it is the retry.
        maxNetworkRetries: 0,
        telemetry: false,
      });
      clients.set(secretKey, client);
    }
    return client;
  };
}
