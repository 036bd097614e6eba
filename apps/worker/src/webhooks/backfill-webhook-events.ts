import {
  eventsAppliedOnce,
  findIntentNamedBy,
  recordIntentEventOnce,
  recordRefundEventOnce,
  WEBHOOK_EVENT_RECORD_TTL_MS,
  type WebhookEventStore,
} from '@once/api/webhooks';
import { tenants } from '@once/db/schema';
import {
  confirmedEventOf,
  handledProcessorEventTypes,
  isRefundEventType,
  refundEventTypes,
} from '@once/payments';
import type Stripe from 'stripe';
import type { Log } from '../runtime/logger.ts';

export interface WebhookBackfillOptions {
  /** The database and an idempotency engine over it: where each event is recorded once. */
  store: WebhookEventStore;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
}

export interface WebhookBackfillSummary {
  /** Events the processor lists as not delivered to the app, in the look-back window. */
  listed: number;
  /** Of those, applied already (by a delivery or an earlier pass): nothing to do. */
  alreadyApplied: number;
  /** Applied by this pass. */
  applied: number;
  /** Not ours to apply: no such tenant, not the intent the payment recorded, intent not final. */
  ignored: number;
  /** The processor could not be asked, or the event was being applied meanwhile: next pass. */
  left: number;
}

/** The event types the webhook receiver applies; no other type moves anything. */
const BACKFILLED_TYPES = [...handledProcessorEventTypes, ...refundEventTypes];

/**
 * How far back events are listed: a day less than the event record's retention, so an event
 * listed again after it was applied is always answered from its record, never applied anew.
 * (Stripe lists events of 30 days.)
 */
const LOOKBACK_MS = WEBHOOK_EVENT_RECORD_TTL_MS - 24 * 60 * 60 * 1000;

/** Events checked against their records at once. */
const PAGE = 100;

/**
 * One pass of the webhook backfill: each tenant's events the app never got
 * (`delivery_success: false`) within the look-back window, applied exactly as the webhook
 * receiver applies them, recorded once per event id under the same key as a delivery, so a
 * late delivery changes nothing. The processor keeps listing a backfilled event as undelivered
 * (as Stripe does); the record check skips it with one query per page.
 */
export async function backfillWebhookEvents(
  options: WebhookBackfillOptions,
): Promise<WebhookBackfillSummary> {
  const summary: WebhookBackfillSummary = {
    listed: 0,
    alreadyApplied: 0,
    applied: 0,
    ignored: 0,
    left: 0,
  };
  const createdSince = Math.floor((Date.now() - LOOKBACK_MS) / 1000);
  const accounts = await options.store.db
    .select({ id: tenants.id, secretKey: tenants.processorSecretKey })
    .from(tenants);
  for (const tenant of accounts) {
    let page: Stripe.Event[] = [];
    try {
      for await (const event of options.processorFor(tenant.secretKey).events.list({
        delivery_success: false,
        types: BACKFILLED_TYPES,
        created: { gte: createdSince },
        limit: PAGE,
      })) {
        page.push(event);
        if (page.length === PAGE) {
          await backfillPage(options, tenant.id, page, summary);
          page = [];
        }
      }
    } catch (error) {
      // Listing failed (the processor is down, the tenant's key refused): the next pass lists again.
      options.log('webhook_backfill.list_failed', { tenant: tenant.id, error: String(error) });
    }
    await backfillPage(options, tenant.id, page, summary);
  }
  return summary;
}

async function backfillPage(
  options: WebhookBackfillOptions,
  tenantId: string,
  events: Stripe.Event[],
  summary: WebhookBackfillSummary,
): Promise<void> {
  summary.listed += events.length;
  const applied = await eventsAppliedOnce(
    options.store.db,
    tenantId,
    events.map((event) => event.id),
  );
  for (const event of events) {
    if (applied.has(event.id)) summary.alreadyApplied++;
    else summary[await backfillEvent(options, event)]++;
  }
}

/** Applies one undelivered event as the webhook receiver would. */
async function backfillEvent(
  options: WebhookBackfillOptions,
  event: Stripe.Event,
): Promise<'applied' | 'alreadyApplied' | 'ignored' | 'left'> {
  const { store, log } = options;
  const named = await findIntentNamedBy(store.db, event as Parameters<typeof findIntentNamedBy>[1]);
  if (named.kind !== 'ours') return 'ignored';
  const { tenantId, recorded } = named;
  const processor = options.processorFor(recorded.secretKey);
  try {
    const applied = { event: event.id, type: event.type, payment: recorded.paymentId };
    if (isRefundEventType(event.type)) {
      const listed = await processor.refunds.list({
        payment_intent: recorded.intentId,
        limit: 100,
      });
      const once = await recordRefundEventOnce(
        store,
        tenantId,
        event,
        recorded.paymentId,
        listed.data,
      );
      if (once.replayed) return 'alreadyApplied';
      const moved = once.result.map((m) => `${m.refundId}:${m.from}->${m.to}`).join(',');
      log('webhook_backfill.applied', { ...applied, moved });
      return 'applied';
    }
    const intent = await processor.paymentIntents.retrieve(recorded.intentId);
    const confirmed = confirmedEventOf(event.id, intent, {
      tenantId,
      paymentId: recorded.paymentId,
    });
    if (!confirmed) return 'ignored';
    const once = await recordIntentEventOnce(store, tenantId, event, confirmed, 'backfill');
    if (once.replayed) return 'alreadyApplied';
    log('webhook_backfill.applied', { ...applied, outcome: once.result.kind });
    return 'applied';
  } catch (error) {
    // The processor could not be asked, or a delivery of this event holds its key (409): the
    // next pass finds it applied, or applies it.
    log('webhook_backfill.left', { event: event.id, type: event.type, error: String(error) });
    return 'left';
  }
}
