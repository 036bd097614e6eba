import type { CheckoutFlowState } from '../../client/use-checkout.ts';

/** Payment statuses as the checkout's status query reports them. */
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
 * Which state to show: the watched payment's status if there is one, else the pay flow's.
 * A page with no request of its own running but an intent sent without a definite answer
 * (a reload, or another tab's attempt) shows `outcome_unknown`: the payment may exist.
 * Back from the bank (the return page), a payment still `requires_action` is
 * `bank_answered`: the shopper answered, the processor's word is not in yet. What the
 * return URL's query says is never read: a browser can carry any query.
 *
 * @example
 * displayState({ phase: 'accepted', ... }, 'succeeded', { watching: true, unconfirmed: false }) // 'succeeded'
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

/** The three steps of a payment the checkout draws as a progress line. */
export type PaymentStep = 'sent' | 'accepted' | 'settled';

/**
 * How far a display state got: which steps are done, and whether the last one is a
 * problem. Steps not reached are drawn pending.
 *
 * @example
 * stepsOf('processing') // { done: ['sent', 'accepted'], current: 'settled' }
 */
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
