import type { CheckoutFlowState } from '../../client/use-checkout.ts';

/** Payment statuses as the API reports them. */
export type PaymentStatusName = 'processing' | 'succeeded' | 'declined' | 'unknown' | 'failed';

/**
 * The one state the checkout shows, exposed as `data-state` for tests and screen readers.
 * Once a payment is accepted its status wins: the request story is over.
 */
export type CheckoutDisplayState =
  | Exclude<CheckoutFlowState['phase'], 'accepted' | 'cancelled'>
  | PaymentStatusName;

/**
 * Which state to show: the watched payment's status if there is one, else the pay flow's.
 *
 * @example
 * displayState({ phase: 'accepted', ... }, 'succeeded') // 'succeeded'
 */
export function displayState(
  flow: CheckoutFlowState,
  paymentStatus: PaymentStatusName | undefined,
  watching: boolean,
): CheckoutDisplayState {
  if (watching) return paymentStatus ?? 'processing';
  if (flow.phase === 'accepted') return 'processing';
  if (flow.phase === 'cancelled') return 'idle';
  return flow.phase;
}
