import { type PaymentStatus, paymentStatuses } from '@once/db/schema';

/** Where a charge still undecided (`processing`, `unknown`) may go. */
const fromUndecided: readonly PaymentStatus[] = [
  'processing',
  'succeeded',
  'declined',
  'unknown',
  'failed',
  'authorized',
  'requires_action',
];

/**
 * Where a payment may go from each state. `processing`: the charge job (or the reconciler's
 * re-enqueued one) is working on it. `unknown`: a charge may or may not exist; only the
 * processor's answer (through the worker, a webhook or the reconciler) moves it on.
 * `authorized`: a manual-capture confirm holds the funds; only the processor's answer to an
 * operator's capture or void (or the authorisation's expiry) moves it on, to `captured` or
 * `voided`. `requires_action`: the confirm asked for 3-D Secure and the shopper's answer on
 * the bank's page is awaited; only the processor's state of the intent moves it on: charged
 * (`succeeded`, or `authorized` for manual capture), declined after the challenge, `failed`
 * authentication, or `canceled` (the reconciler cancels a challenge left unanswered). It
 * never goes back to `processing`: nothing re-confirms an intent the shopper must answer.
 * `succeeded`, `declined`, `failed`, `captured`, `voided` and `canceled` are terminal:
 * nothing moves them again, whoever asks and however late, so a stale worker or a late
 * webhook can never overwrite the processor's definite answer. `processing -> processing`
 * and `unknown -> unknown` are allowed: a re-enqueued charge, a second ambiguous answer.
 */
export const paymentTransitions: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  processing: fromUndecided,
  unknown: fromUndecided,
  authorized: ['captured', 'voided'],
  requires_action: ['succeeded', 'declined', 'failed', 'authorized', 'canceled'],
  succeeded: [],
  declined: [],
  failed: [],
  captured: [],
  voided: [],
  canceled: [],
};

/** The states a payment never leaves: the processor's definite answer, or proof of no charge. */
export const terminalPaymentStatuses: readonly PaymentStatus[] = paymentStatuses.filter(
  (status) => paymentTransitions[status].length === 0,
);

/**
 * The states still waiting for the processor's answer to a charge: the worker's and the
 * reconciler's work, the states a re-enqueued charge or a second ambiguous answer may leave
 * as they are. `authorized` is not one: it waits for an operator; nor is `requires_action`:
 * it waits for the shopper (the reconciler's 3-D Secure pass looks at it).
 */
export const unsettledPaymentStatuses: readonly PaymentStatus[] = paymentStatuses.filter((status) =>
  canMovePayment(status, status),
);

/** Whether a payment in `from` may be moved to `to`. */
export function canMovePayment(from: PaymentStatus, to: PaymentStatus): boolean {
  return paymentTransitions[from].includes(to);
}

/** Whether `status` is terminal (it never moves again). */
export function isTerminalPayment(status: PaymentStatus): boolean {
  return terminalPaymentStatuses.includes(status);
}

/**
 * The states a payment may be moved to `to` from: what a guarded update's `where status in
 * (...)` lists.
 */
export function statusesMovableTo(to: PaymentStatus): PaymentStatus[] {
  return paymentStatuses.filter((from) => canMovePayment(from, to));
}
