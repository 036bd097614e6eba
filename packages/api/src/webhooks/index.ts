// @once/api/webhooks: what the processor's webhook route needs of the API (the events
// themselves are applied by @once/payments).

export { resolveEventTenant } from './resolve-event-tenant.ts';
export { recordWebhookEvent } from './webhook-events.ts';
