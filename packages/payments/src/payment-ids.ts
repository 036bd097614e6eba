import { randomUUID } from 'node:crypto';

/** `<prefix>_` and 32 lowercase hex digits (a UUID v4 without its dashes). */
function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/**
 * A new payment id: `pay_` and 32 hex digits.
 *
 * @example
 * newPaymentId(); // 'pay_3f2b...'
 */
export function newPaymentId(): string {
  return newId('pay');
}

/**
 * A new outbox job id: `job_` and 32 hex digits, the same for the job `checkout.pay` writes
 * and every job the reconciler enqueues again.
 *
 * @example
 * newJobId(); // 'job_9c1d...'
 */
export function newJobId(): string {
  return newId('job');
}

/**
 * The downstream Idempotency-Key the worker sends to the processor for this payment:
 * derived from the payment, so every attempt (and every re-enqueued job) reuses it.
 *
 * @example
 * downstreamKeyFor('pay_1'); // 'once_pay_pay_1'
 */
export function downstreamKeyFor(paymentId: string): string {
  return `once_pay_${paymentId}`;
}

/**
 * The Idempotency-Key of the confirm of a payment's intent (step B of the two-step charge):
 * derived, so every attempt of every job sends the same.
 *
 * @example
 * confirmKeyFor('once_pay_pay_1'); // 'once_pay_pay_1:confirm'
 */
export function confirmKeyFor(downstreamKey: string): string {
  return `${downstreamKey}:confirm`;
}

/**
 * The Idempotency-Key of the reconciler's cancel of a payment's intent: one per payment, so
 * a cancel re-sent after a lost answer is the same cancel.
 *
 * @example
 * cancelKeyFor('once_pay_pay_1'); // 'once_pay_pay_1:cancel'
 */
export function cancelKeyFor(downstreamKey: string): string {
  return `${downstreamKey}:cancel`;
}
