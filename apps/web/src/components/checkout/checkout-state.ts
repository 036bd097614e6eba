import type { CheckoutFlowState } from '../../client/use-checkout.ts';

export type PaymentStatusName =
  | 'processing'
  | 'succeeded'
  | 'declined'
  | 'unknown'
  | 'failed'
  | 'requires_action'
  | 'canceled';

/**
 * The one state the checkout shows, exposed as `data-state` for tests and screen readers.
 * Once a payment is accepted its status wins: the request story is over.
 */
export type CheckoutDisplayState =
  | Exclude<CheckoutFlowState['phase'], 'accepted' | 'cancelled'>
  | PaymentStatusName
  /** Back from the bank's 3-D Secure page; the app is asking the processor what happened. */
  | 'bank_answered';

/**
 * The watched payment's status if there is one, else the pay flow's; an intent sent without a
 * definite answer is `outcome_unknown` (the payment may exist). The bank's return URL query is
 * never read: a browser can carry any query.
 */
export function displayState(
  flow: CheckoutFlowState,
  paymentStatus: PaymentStatusName | undefined,
  intent: { watching: boolean; unconfirmed: boolean; returnedFromBank?: boolean },
): CheckoutDisplayState {
  if (intent.watching) {
    if (paymentStatus === 'requires_action' && intent.returnedFromBank) return 'bank_answered';
    return paymentStatus ?? 'processing';
  }
  if (flow.phase === 'accepted') return 'processing';
  if (flow.phase === 'idle' || flow.phase === 'cancelled') {
    return intent.unconfirmed ? 'outcome_unknown' : 'idle';
  }
  return flow.phase;
}

export type PaymentStep = 'sent' | 'accepted' | 'settled';

/** How far a display state got; steps not reached are drawn pending. */
export function stepsOf(state: CheckoutDisplayState): {
  done: PaymentStep[];
  current: PaymentStep | undefined;
} {
  switch (state) {
    case 'idle':
      return { done: [], current: undefined };
    case 'processing':
    case 'unknown':
    case 'requires_action':
    case 'bank_answered':
      return { done: ['sent', 'accepted'], current: 'settled' };
    case 'succeeded':
    case 'declined':
    case 'failed':
    case 'canceled':
      return { done: ['sent', 'accepted', 'settled'], current: undefined };
    default:
      return { done: [], current: 'sent' };
  }
}
