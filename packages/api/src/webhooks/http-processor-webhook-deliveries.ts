import { askProcessorAdmin, type ProcessorAdminApi } from '../processor/admin-api.ts';
import { ProcessorUnreachableError } from '../processor/processor-ledger.ts';
import type {
  ProcessorWebhookDeliveries,
  WebhookDelivery,
} from './processor-webhook-deliveries.ts';

interface AdminWebhookEvent {
  id: string;
  type: string;
  status: WebhookDelivery['status'];
  attempts: number;
  deliveries: number;
  delivered_at: string | null;
  next_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created: string;
  event: {
    data?: {
      object?: { id?: string; payment_intent?: string | null; metadata?: Record<string, string> };
    };
  };
}

function deliveryOf(row: AdminWebhookEvent): WebhookDelivery {
  const object = row.event.data?.object;
  const paymentIntentId =
    object?.payment_intent ?? (object?.id?.startsWith('pi_') ? object.id : null);
  return {
    eventId: row.id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    deliveries: row.deliveries,
    deliveredAt: row.delivered_at,
    nextAttemptAt: row.next_attempt_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
    createdAt: row.created,
    paymentIntentId: paymentIntentId ?? null,
    paymentId: object?.metadata?.payment_id ?? null,
  };
}

/**
 * The webhook outbox over the processor's admin API (`GET /admin/webhook-events`, `POST
 * /admin/webhook-events/:id/resend`), with the same URL and token as the ledger. A resend
 * waits for the endpoint's answer (the processor gives it 10 s), so its bound is longer.
 */
export function createHttpProcessorWebhookDeliveries(
  options: ProcessorAdminApi & {
    /** Bound of a list; default 2 000 ms. A resend gets 15 000 ms. */
    timeoutMs?: number;
  },
): ProcessorWebhookDeliveries {
  const ask = (path: string, init: { method?: 'POST'; body?: unknown; timeoutMs: number }) =>
    askProcessorAdmin(options, 'processor webhook outbox', path, {
      ...init,
      notFoundIsAnswer: true,
    });

  return {
    async list(account, filter) {
      const query = new URLSearchParams({ account, limit: String(filter.limit) });
      if (filter.paymentIntentId) query.set('payment_intent', filter.paymentIntentId);
      const { status, body } = await ask(`/admin/webhook-events?${query}`, {
        timeoutMs: options.timeoutMs ?? 2_000,
      });
      const data = (body as { data?: AdminWebhookEvent[] }).data;
      if (status !== 200 || !Array.isArray(data)) {
        throw new ProcessorUnreachableError('processor webhook outbox answered without a list');
      }
      return data.map(deliveryOf).reverse();
    },
    async resend(account, eventId) {
      const { status, body } = await ask(
        `/admin/webhook-events/${encodeURIComponent(eventId)}/resend`,
        { method: 'POST', body: { account }, timeoutMs: 15_000 },
      );
      if (status === 404) return undefined;
      const answer = body as {
        delivered: boolean;
        status: number | null;
        error: string | null;
        webhook_event: AdminWebhookEvent;
      };
      return {
        delivered: answer.delivered,
        status: answer.status,
        error: answer.error,
        delivery: deliveryOf(answer.webhook_event),
      };
    },
  };
}
