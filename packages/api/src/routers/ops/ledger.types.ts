import type { PaymentStatus } from '@once/db/schema';

/**
 * How the app's payment compares with the processor's ledger.
 *
 * - `agrees`: succeeded with exactly one matching charge, or declined/failed with none.
 * - `not_charged`: still `processing`/`unknown` and no charge yet (normal while in flight).
 * - `app_behind`: the processor charged once, the app has not recorded it yet
 *   (`processing`/`unknown`); converges through the worker, webhook or reconciler.
 * - `double_charge`: two or more charges for one payment. Never acceptable.
 * - `charged_but_app_declined_or_failed`: money moved, the app told the customer it did not.
 * - `succeeded_without_charge`: the app says succeeded, the ledger holds no charge.
 * - `mismatch`: one charge, but another PaymentIntent or amount/currency than the app's.
 * - `unverified`: the processor could not be asked (see `processor` on the result).
 */
export type LedgerVerdict =
  | 'agrees'
  | 'not_charged'
  | 'app_behind'
  | 'double_charge'
  | 'charged_but_app_declined_or_failed'
  | 'succeeded_without_charge'
  | 'mismatch'
  | 'unverified';

/** `ok`: fine; `pending`: in flight, should converge; `alarm`: an operator must look. */
export type LedgerVerdictSeverity = 'ok' | 'pending' | 'alarm';

/** The processor's side of one payment: its successful charges. */
export interface ProcessorSide {
  chargeCount: number;
  /** Sum of the charges (what the customer paid in total). */
  chargedAmount: number;
  currency: string | null;
  /** PaymentIntent of the first charge (the one the app should know). */
  paymentIntentId: string | null;
  /** Every charged PaymentIntent, oldest first (more than one only on a double charge). */
  paymentIntentIds: string[];
}

export interface OpsLedgerRow {
  paymentId: string;
  appStatus: PaymentStatus;
  appAmount: number;
  appCurrency: string;
  appPaymentIntentId: string | null;
  downstreamKey: string;
  createdAt: string;
  /** Null when the processor could not be asked. */
  processor: ProcessorSide | null;
  verdict: LedgerVerdict;
  /** Why the verdict, in words, for the operator. */
  reason: string;
}

export interface OpsLedgerResult {
  /**
   * `reachable`: rows carry the processor's side. `unreachable`: the app side only (every
   * verdict `unverified`). `no_account`: the tenant has no processor account configured.
   */
  processor: 'reachable' | 'unreachable' | 'no_account';
  processorAccountId: string | null;
  /** Why the processor could not be asked, if it could not. */
  processorError: string | null;
  checkedAt: string;
  rows: OpsLedgerRow[];
}
