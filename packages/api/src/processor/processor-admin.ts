// What the cockpit asks the processor's admin API: its ledger and its webhook outbox.

/**
 * One successful charge as the processor's ledger records it (`GET /admin/ledger`, kind
 * `charge`). Only the fields the operator comparison needs.
 */
export interface LedgerCharge {
  seq: number;
  paymentIntentId: string;
  chargeId: string | null;
  amount: number;
  currency: string;
  /** The Idempotency-Key the charging request carried (the app's downstream key). */
  idempotencyKey: string | null;
  metadata: Record<string, string>;
  createdAt: string;
}

/**
 * Read access to the processor's ledger, the ground truth of what was charged. An
 * interface so router tests can pass a fake where a real processor is overkill.
 */
export interface ProcessorLedger {
  /**
   * Every charge of one merchant account. Rejects with `ProcessorUnreachableError` when the
   * processor cannot be asked (down, slow, refusing): callers decide how to degrade.
   */
  chargesOf(account: string): Promise<LedgerCharge[]>;
}

/** The processor did not answer usefully (connection refused, timeout, non-2xx, bad JSON). */
export class ProcessorUnreachableError extends Error {
  override readonly name = 'ProcessorUnreachableError';
}

/**
 * What the processor answered about a tenant's account, or why it could not be asked (no
 * account, or unreachable with its error): the cockpit answers either way, as an operator needs
 * it most when the processor is in trouble.
 */
export type ProcessorAnswer<T> =
  | { answer: T; processor: 'reachable'; processorError: null }
  | { answer: null; processor: 'no_account' | 'unreachable'; processorError: string };

export async function askProcessorAbout<T>(
  accountId: string | null,
  ask: (account: string) => Promise<T>,
): Promise<ProcessorAnswer<T>> {
  if (!accountId) {
    return {
      answer: null,
      processor: 'no_account',
      processorError: 'the tenant has no processor account',
    };
  }
  try {
    return { answer: await ask(accountId), processor: 'reachable', processorError: null };
  } catch (error) {
    if (!(error instanceof ProcessorUnreachableError)) throw error;
    return { answer: null, processor: 'unreachable', processorError: error.message };
  }
}

/** A ledger for deployments that configured no processor: every question is unanswerable. */
export const unconfiguredProcessorLedger: ProcessorLedger = {
  chargesOf: () => Promise.reject(new ProcessorUnreachableError('PROCESSOR_URL is not set')),
};

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
