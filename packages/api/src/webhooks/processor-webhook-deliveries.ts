import { ProcessorUnreachableError } from '../processor/processor-ledger.ts';

/**
 * One event of the processor's webhook outbox as the operator sees it (`GET
 * /admin/webhook-events`): `delivered`, `pending` (not sent yet, or retrying at
 * `nextAttemptAt`), `failed` (no automatic attempt left; a resend still sends it).
 */
export interface WebhookDelivery {
  eventId: string;
  type: string;
  status: 'delivered' | 'pending' | 'failed';
  attempts: number;
  /** 2xx answers received (more than one after a resend or a duplicate). */
  deliveries: number;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
  /** The endpoint's last HTTP status; null: no answer (refused, timed out) or never sent. */
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  /** The PaymentIntent the event is about, and the payment its metadata names (a hint). */
  paymentIntentId: string | null;
  paymentId: string | null;
}

/** What the endpoint answered a resend, and the event after it. */
interface WebhookResend {
  delivered: boolean;
  status: number | null;
  error: string | null;
  delivery: WebhookDelivery;
}

/**
 * The processor's webhook outbox of one merchant account, over its admin API. An interface so
 * router tests may pass a fake; every method rejects with `ProcessorUnreachableError` when the
 * processor cannot be asked.
 */
export interface ProcessorWebhookDeliveries {
  /** The newest `limit` events of `account` (of one PaymentIntent when given), newest first. */
  list(
    account: string,
    filter: { paymentIntentId?: string; limit: number },
  ): Promise<WebhookDelivery[]>;
  /** Sends event `eventId` of `account` again now; undefined: no such event in that account. */
  resend(account: string, eventId: string): Promise<WebhookResend | undefined>;
}

/** For deployments that configured no processor: every question is unanswerable. */
export const unconfiguredProcessorWebhookDeliveries: ProcessorWebhookDeliveries = {
  list: () => Promise.reject(new ProcessorUnreachableError('PROCESSOR_URL is not set')),
  resend: () => Promise.reject(new ProcessorUnreachableError('PROCESSOR_URL is not set')),
};
