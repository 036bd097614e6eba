import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import type { accounts } from '../db/schema/index.ts';
import type { FormParams } from './form-params.ts';

export type Account = typeof accounts.$inferSelect;

/** What an operation answers: an HTTP status and a Stripe-shaped JSON body. */
export interface StripeResult {
  status: number;
  body: unknown;
}

/** Everything an operation may read about the request; the account comes from the API key. */
interface OperationInput {
  account: Account;
  params: FormParams;
  pathParams: Record<string, string>;
  /** The request's `Idempotency-Key`, recorded on ledger rows and events. */
  idempotencyKey: string | null;
  timing: OperationTiming;
  /** Where a shopper's browser reaches this processor's hosted 3-D Secure challenge. */
  challengeBaseUrl: string;
}

/** The processor's own delays an operation schedules by (on the database clock). */
export interface OperationTiming {
  /** How long an authorisation stays capturable (`PROCESSOR_AUTHORIZATION_WINDOW_MS`). */
  authorizationWindowMs: number;
  /** When an asynchronous refund changes status (`PROCESSOR_REFUND_SETTLE_MS`). */
  refundSettleMs: number;
}

/**
 * A Stripe API operation. It runs inside the caller's transaction, so its writes, the
 * ledger row and the stored idempotent response commit or roll back together. Validation
 * failures throw {@link StripeApiError} (nothing is written); deliberate outcomes such as
 * a declined card are returned as results (they are stored and replayed).
 */
export type StripeOperation = (
  tx: ProcessorTransaction,
  input: OperationInput,
) => Promise<StripeResult>;

/** A read-only operation: runs on the pool (or inside a transaction), writes nothing. */
export type ReadOperation = (
  db: ProcessorDatabase | ProcessorTransaction,
  input: OperationInput,
) => Promise<StripeResult>;
