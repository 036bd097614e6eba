/**
 * The code recorded on a payment declined without a `decline_code` or `code` from the
 * processor: Stripe's generic decline code.
 */
export const FALLBACK_DECLINE_CODE = 'card_declined';

/** The part of a processor error (Stripe's `last_payment_error`, a card error) a decline code comes from. */
export interface ProcessorDeclineError {
  decline_code?: string | null;
  code?: string | null;
}

/**
 * The decline code to record: the processor's `decline_code`, else its `code`, else
 * {@link FALLBACK_DECLINE_CODE}. The worker, the webhook receiver and the reconciler all read
 * declines through this, so the same decline is recorded the same way whoever sees it first.
 */
export function declineCodeOf(error: ProcessorDeclineError | null | undefined): string {
  return error?.decline_code ?? error?.code ?? FALLBACK_DECLINE_CODE;
}
