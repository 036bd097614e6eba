import type { RefundStatus } from '@once/db/schema';

/**
 * A refund's lifecycle, the one both the worker (its refund job's answers) and the webhook
 * receiver (`refund.*`, `charge.refunded`) record through, so neither undoes the other:
 * - `requested` (written with its job) and `unknown` (the job ran out of attempts on doubtful
 *   answers) move to whatever the processor says: `pending`, `succeeded`, `failed`;
 *   `requested` and `pending` may also become `unknown`.
 * - `pending` becomes `succeeded` or `failed` (Stripe's asynchronous refunds).
 * - `succeeded` may still become `failed`: Stripe documents that a refund can fail after it
 *   succeeded, and the money comes back (`refund.failed`; its test card `pm_card_refundFail`).
 * - `failed` is final.
 */
const REFUND_MOVES: Record<RefundStatus, readonly RefundStatus[]> = {
  requested: ['pending', 'succeeded', 'failed', 'unknown'],
  unknown: ['pending', 'succeeded', 'failed'],
  pending: ['succeeded', 'failed', 'unknown'],
  succeeded: ['failed'],
  failed: [],
};

/** Statuses the processor has not answered finally. */
const UNANSWERED: readonly RefundStatus[] = ['requested', 'pending', 'unknown'];

/**
 * Whether a refund `from` may be recorded as `to`. Recording the same status again is allowed
 * only while the processor has given no final answer (a `pending` refund re-recorded with
 * its processor id); a `succeeded` or `failed` refund is not written again.
 */
export function canRecordRefund(from: RefundStatus, to: RefundStatus): boolean {
  return REFUND_MOVES[from].includes(to) || (from === to && UNANSWERED.includes(from));
}

/**
 * Every status a refund may be in to be recorded as `to`: the guard of an
 * `update refunds ... where status in (...)`, so a concurrent writer never moves it illegally.
 */
export function refundStatusesRecordableAs(to: RefundStatus): RefundStatus[] {
  return (Object.keys(REFUND_MOVES) as RefundStatus[]).filter((from) => canRecordRefund(from, to));
}

/**
 * The app's status for a processor Refund's `status` (Stripe: `pending`, `requires_action`,
 * `succeeded`, `failed`, `canceled`); null when there is nothing final or pending to record.
 * A canceled refund moved no money: `failed` (it no longer counts against the payment).
 */
export function refundStatusOfProcessor(status: string | null | undefined): RefundStatus | null {
  switch (status) {
    case 'pending':
    case 'succeeded':
    case 'failed':
      return status;
    case 'canceled':
      return 'failed';
    default:
      return null;
  }
}
