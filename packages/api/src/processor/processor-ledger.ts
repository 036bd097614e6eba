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

/** A ledger for deployments that configured no processor: every question is unanswerable. */
export const unconfiguredProcessorLedger: ProcessorLedger = {
  chargesOf: () => Promise.reject(new ProcessorUnreachableError('PROCESSOR_URL is not set')),
};
