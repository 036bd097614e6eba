import type { RouterOutputs } from '@once/api';

export type WebhookDelivery = RouterOutputs['ops']['webhookDeliveries']['deliveries'][number];

/**
 * Where one event's delivery stands, in the operator's words: `delivered`; `retrying` (an
 * attempt failed, the next one is at `nextAttemptAt`); `queued` (not sent yet); `failed` (no
 * automatic attempt left: only a resend sends it again).
 */
export type DeliveryState =
  | { kind: 'delivered'; at: string | null }
  | { kind: 'retrying'; nextAt: string | null }
  | { kind: 'queued' }
  | { kind: 'failed' };

export function deliveryStateOf(delivery: WebhookDelivery): DeliveryState {
  if (delivery.status === 'delivered') return { kind: 'delivered', at: delivery.deliveredAt };
  if (delivery.status === 'failed') return { kind: 'failed' };
  if (delivery.lastStatus === null && delivery.lastError === null) return { kind: 'queued' };
  return { kind: 'retrying', nextAt: delivery.nextAttemptAt };
}

/** The endpoint's last answer in a few words: its HTTP status, or why none came. */
export function lastAnswerOf(delivery: Pick<WebhookDelivery, 'lastStatus' | 'lastError'>): string {
  if (delivery.lastStatus !== null) return `HTTP ${delivery.lastStatus}`;
  if (delivery.lastError !== null) return `no answer (${delivery.lastError})`;
  return 'not sent yet';
}
