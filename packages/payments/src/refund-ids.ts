import { randomUUID } from 'node:crypto';

/**
 * A new refund id: `rf_` and 32 hex digits (the processor's own are `re_...`).
 *
 * @example
 * newRefundId(); // 'rf_3f2b...'
 */
export function newRefundId(): string {
  return `rf_${randomUUID().replaceAll('-', '')}`;
}

/**
 * The downstream Idempotency-Key of one refund: derived from the refund's own id, so every
 * attempt of its job sends the same (a lost answer is replayed, never refunded twice) and two
 * refunds of one payment never share one.
 *
 * @example
 * refundDownstreamKeyFor('rf_1'); // 'once_refund_rf_1'
 */
export function refundDownstreamKeyFor(refundId: string): string {
  return `once_refund_${refundId}`;
}
