import {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
  type ProcessorWebhookDeliveries,
  type WebhookDelivery,
} from './processor-admin.ts';

/** The processor's admin API: its base URL (PROCESSOR_URL) and `X-Admin-Token` (PROCESSOR_ADMIN_TOKEN). */
interface ProcessorAdminApi {
  url: string;
  adminToken: string;
  fetch?: typeof fetch;
}

/**
 * One call of the processor's admin API within `timeoutMs` (connect, answer and body): its
 * status and JSON body. Not reached, too slow, not JSON, or a status other than 2xx (and 404
 * when `notFoundIsAnswer`) is a `ProcessorUnreachableError` naming `what`, so a hung or
 * refusing processor costs the cockpit at most `timeoutMs` and degrades it instead of failing.
 */
async function askProcessorAdmin(
  api: ProcessorAdminApi,
  what: string,
  path: string,
  init: { method?: 'GET' | 'POST'; body?: unknown; timeoutMs: number; notFoundIsAnswer?: boolean },
): Promise<{ status: number; body: unknown }> {
  try {
    const response = await (api.fetch ?? fetch)(new URL(path, api.url), {
      method: init.method ?? 'GET',
      headers: {
        'x-admin-token': api.adminToken,
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(init.timeoutMs),
    });
    if (!response.ok && !(response.status === 404 && init.notFoundIsAnswer)) {
      throw new ProcessorUnreachableError(`${what} answered ${response.status}`);
    }
    return { status: response.status, body: await response.json() };
  } catch (error) {
    if (error instanceof ProcessorUnreachableError) throw error;
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new ProcessorUnreachableError(`${what} not reachable (${reason})`, { cause: error });
  }
}

interface AdminLedgerEntry {
  seq: number;
  kind: string;
  payment_intent: string;
  charge: string | null;
  amount: number;
  currency: string;
  idempotency_key: string | null;
  metadata: Record<string, string> | null;
  created: string;
}

/** Reads the ledger over the processor's admin API (`GET /admin/ledger?account=&kind=charge`). */
export function createHttpProcessorLedger(
  options: ProcessorAdminApi & {
    /** Whole-request bound (connect + answer + body); default 2 000 ms. */
    timeoutMs?: number;
  },
): ProcessorLedger {
  return {
    async chargesOf(account) {
      const query = new URLSearchParams({ account, kind: 'charge' });
      const { body } = await askProcessorAdmin(
        options,
        'processor ledger',
        `/admin/ledger?${query}`,
        {
          timeoutMs: options.timeoutMs ?? 2_000,
        },
      );
      const data = (body as { data?: AdminLedgerEntry[] }).data;
      if (!Array.isArray(data)) {
        throw new ProcessorUnreachableError('processor ledger answered without a data array');
      }
      return data
        .filter((entry) => entry.kind === 'charge')
        .map(
          (entry): LedgerCharge => ({
            seq: entry.seq,
            paymentIntentId: entry.payment_intent,
            chargeId: entry.charge,
            amount: entry.amount,
            currency: entry.currency,
            idempotencyKey: entry.idempotency_key,
            metadata: entry.metadata ?? {},
            createdAt: entry.created,
          }),
        );
    },
  };
}

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
