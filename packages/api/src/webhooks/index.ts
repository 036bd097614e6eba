// @once/api/webhooks: what applying a processor event needs of the API, for the webhook
// route and the worker's backfill of undelivered events (the events themselves are applied
// by @once/payments).

export {
  eventsAppliedOnce,
  type RecordedOnce,
  recordIntentEventOnce,
  recordRefundEventOnce,
  WEBHOOK_EVENT_RECORD_TTL_MS,
  type WebhookEventStore,
} from './record-event-once.ts';
export { findIntentNamedBy } from './recorded-intent.ts';
