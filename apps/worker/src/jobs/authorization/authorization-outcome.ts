import type { PaymentIntentState } from '../../processor/charge-outcome.ts';

/** What the processor's intent proves about an authorisation, whoever asked for what. */
export type AuthorizationEnd =
  /** Captured once: `succeeded`, `amount_received` the captured amount. */
  | { payment: 'captured'; amountCaptured: number }
  /** Canceled: voided by an operator, or its window expired. Nothing was captured. */
  | { payment: 'voided' };

/** The fields of a captured or canceled PaymentIntent the worker reads. */
export interface AuthorizationIntentState extends PaymentIntentState {
  amount_received?: number;
}

/**
 * Where an authorisation ended, or `null` while it still waits (`requires_capture`) or is in
 * a state the worker cannot read as an end.
 *
 * @example
 * authorizationEndOf({ id: 'pi_1', status: 'succeeded', amount_received: 1500 });
 * // { payment: 'captured', amountCaptured: 1500 }
 */
export function authorizationEndOf(intent: AuthorizationIntentState): AuthorizationEnd | null {
  if (intent.status === 'succeeded') {
    return { payment: 'captured', amountCaptured: intent.amount_received ?? 0 };
  }
  if (intent.status === 'canceled') return { payment: 'voided' };
  return null;
}
