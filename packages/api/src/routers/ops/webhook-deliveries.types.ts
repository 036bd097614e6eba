import { z } from 'zod';
import type { WebhookDelivery } from '../../webhooks/processor-webhook-deliveries.ts';

/** One payment's events (`paymentId`), or the tenant's newest `limit` events. */
export const webhookDeliveriesInput = z
  .object({
    paymentId: z.string().min(1).max(100).optional(),
    limit: z.number().int().min(1).max(100).default(50),
  })
  .default({ limit: 50 });
export type WebhookDeliveriesInput = z.infer<typeof webhookDeliveriesInput>;

export const resendWebhookInput = z.object({
  eventId: z.string().regex(/^evt_[A-Za-z0-9_]{1,100}$/),
});
export type ResendWebhookInput = z.infer<typeof resendWebhookInput>;

/**
 * The processor's webhook outbox for the caller's tenant, newest first. `processor` says
 * whether it could be asked: `no_intent` (the payment has no PaymentIntent yet, so no events),
 * `no_account` (the tenant has no processor account), `unreachable` (with `processorError`).
 */
export interface OpsWebhookDeliveries {
  processor: 'reachable' | 'unreachable' | 'no_account' | 'no_intent';
  processorError: string | null;
  deliveries: WebhookDelivery[];
}
