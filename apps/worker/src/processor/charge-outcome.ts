import { declineCodeOf, isAuthenticationFailure, type PaymentSettlement } from '@once/payments';
import Stripe from 'stripe';

/**
 * What one charge attempt tells us, in the terms of the failure policy:
 * - `succeeded` / `declined`: the processor's definite answer; record it, never retry.
 * - `authorized`: a manual-capture intent holds the funds (`requires_capture`): definite for
 *   the charge; an operator's capture or void moves the money on.
 * - `canceled`: the processor canceled the intent before any charge: proof that nobody
 *   was charged and nobody will be; the payment may be settled `failed`.
 * - `requires_action`: the card needs 3-D Secure: the shopper must answer the bank's
 *   challenge at `nextActionUrl`. Definite for the job (nothing it can move); the processor's
 *   state of the intent settles the payment later (webhook, reconciler).
 * - `authentication_failed`: the shopper failed the challenge; nothing was charged, and
 *   nothing re-confirms the intent: the payment is `failed`, a new payment is a new intent.
 * - `in_flight`: the processor says the request is still running (409
 *   `idempotency_key_in_use`) or the intent is `processing`. Not a failure: it never
 *   counts toward the dead letter and never leads to `failed`.
 * - `ambiguous`: the request may or may not have reached the processor (timeout, reset,
 *   5xx, 429). Retry later; the next attempt asks the processor first.
 * - `rejected`: the processor refused the request itself (4xx other than a decline, and a 404
 *   other than {@link isNotVisibleYet}). Not retried blindly; the payment becomes `unknown`
 *   and the reconciler asks the processor.
 */
export type ChargeOutcome =
  | { kind: 'succeeded'; paymentIntentId: string }
  | { kind: 'authorized'; paymentIntentId: string }
  | { kind: 'declined'; code: string; message?: string; paymentIntentId?: string }
  | { kind: 'canceled'; paymentIntentId: string }
  | { kind: 'requires_action'; paymentIntentId: string; nextActionUrl: string | null }
  | { kind: 'authentication_failed'; code: string; message?: string; paymentIntentId: string }
  | { kind: 'in_flight'; reason: string }
  | { kind: 'ambiguous'; reason: string }
  | { kind: 'rejected'; code: string; message?: string };

/** An outcome that settles the payment: the processor's word on the intent. */
export type DefiniteOutcome = Exclude<
  ChargeOutcome,
  { kind: 'in_flight' | 'ambiguous' | 'rejected' }
>;

/** Whether the outcome settles the payment ({@link settlementOf}). */
export function isDefinite(outcome: ChargeOutcome): outcome is DefiniteOutcome {
  return !['in_flight', 'ambiguous', 'rejected'].includes(outcome.kind);
}

/**
 * Where a definite outcome moves the payment, the same for the charge's job and the
 * reconciler: an intent canceled before any charge is `failed` (nobody was charged), a failed
 * challenge is `failed` with its authentication error.
 *
 * @example
 * settlementOf({ kind: 'succeeded', paymentIntentId: 'pi_1' }); // { status: 'succeeded', processorPaymentIntentId: 'pi_1' }
 */
export function settlementOf(outcome: DefiniteOutcome): PaymentSettlement {
  switch (outcome.kind) {
    case 'succeeded':
    case 'authorized':
      return { status: outcome.kind, processorPaymentIntentId: outcome.paymentIntentId };
    case 'declined':
    case 'authentication_failed':
      return {
        status: outcome.kind === 'declined' ? 'declined' : 'failed',
        processorPaymentIntentId: outcome.paymentIntentId,
        code: outcome.code,
        message: outcome.message,
      };
    case 'canceled':
      return {
        status: 'failed',
        processorPaymentIntentId: outcome.paymentIntentId,
        code: 'canceled_not_charged',
        message: `the processor canceled ${outcome.paymentIntentId} before any charge`,
      };
    case 'requires_action':
      return {
        status: 'requires_action',
        processorPaymentIntentId: outcome.paymentIntentId,
        nextActionUrl: outcome.nextActionUrl,
      };
  }
}

/** The fields of a PaymentIntent the worker and the reconciler decide on. */
export interface PaymentIntentState {
  id: string;
  status: string;
  last_payment_error?: { code?: string; decline_code?: string; message?: string } | null;
  /** What the shopper must do (`requires_action`): Stripe's `redirect_to_url` names the page. */
  next_action?: { type: string; redirect_to_url?: { url?: string | null } | null } | null;
  /** The worker's `payment_id` names the payment it was made for (an earlier one, maybe). */
  metadata?: Record<string, string> | null;
}

/**
 * The outcome a PaymentIntent's status proves, or `null` when it still waits for a
 * confirm (`requires_confirmation`, or `requires_payment_method` without an error): then
 * nothing has been charged on it yet, and confirming it is the next step.
 *
 * @example
 * settledOutcomeOf({ id: 'pi_1', status: 'succeeded' }); // { kind: 'succeeded', paymentIntentId: 'pi_1' }
 * settledOutcomeOf({ id: 'pi_1', status: 'requires_confirmation' }); // null
 */
export function settledOutcomeOf(intent: PaymentIntentState): ChargeOutcome | null {
  const error = intent.last_payment_error;
  switch (intent.status) {
    case 'succeeded':
      return { kind: 'succeeded', paymentIntentId: intent.id };
    case 'requires_capture':
      return { kind: 'authorized', paymentIntentId: intent.id };
    case 'requires_payment_method':
    case 'canceled':
      // A failed charge detaches the payment method (requires_payment_method + error), an
      // intent canceled after a decline keeps the error: both are declines, except a failed
      // challenge, which leaves the same shape with its own code.
      if (error) {
        const kind = isAuthenticationFailure(error) ? 'authentication_failed' : 'declined';
        const { message } = error;
        return { kind, code: declineCodeOf(error), message, paymentIntentId: intent.id };
      }
      return intent.status === 'canceled' ? { kind: 'canceled', paymentIntentId: intent.id } : null;
    case 'requires_confirmation':
      return null;
    case 'processing':
      // The processor is still deciding: wait, it will.
      return { kind: 'in_flight', reason: 'payment_intent_processing' };
    case 'requires_action':
      // The shopper's turn: the job records where to send them and ends; confirming again
      // would only ask for the same challenge.
      return {
        kind: 'requires_action',
        paymentIntentId: intent.id,
        nextActionUrl:
          intent.next_action?.type === 'redirect_to_url'
            ? (intent.next_action.redirect_to_url?.url ?? null)
            : null,
      };
    default:
      // A state this worker does not know: nothing it can move, so it counts toward the dead
      // letter and the reconciler keeps asking.
      return { kind: 'ambiguous', reason: `payment_intent_${intent.status}` };
  }
}

/**
 * Maps the PaymentIntent a confirm returned to an outcome. An intent that still waits for
 * a confirm after one is ambiguous (it should not happen; the next attempt asks again).
 *
 * @example
 * outcomeOfPaymentIntent({ id: 'pi_1', status: 'succeeded' }); // { kind: 'succeeded', paymentIntentId: 'pi_1' }
 */
export function outcomeOfPaymentIntent(intent: PaymentIntentState): ChargeOutcome {
  return (
    settledOutcomeOf(intent) ?? { kind: 'ambiguous', reason: `payment_intent_${intent.status}` }
  );
}

/**
 * Maps an error thrown by the `stripe` SDK (or anything else thrown while calling it) to an
 * outcome. Unknown errors count as ambiguous: when in doubt, assume the charge may exist.
 *
 * @example
 * outcomeOfChargeError(new Stripe.errors.StripeConnectionError({ message: 'reset' })); // ambiguous
 */
export function outcomeOfChargeError(error: unknown): ChargeOutcome {
  if (!(error instanceof Stripe.errors.StripeError)) {
    return { kind: 'ambiguous', reason: error instanceof Error ? error.message : String(error) };
  }
  const status = error.statusCode;
  if (error instanceof Stripe.errors.StripeCardError || status === 402) {
    return {
      kind: 'declined',
      code: declineCodeOf(error),
      message: error.message,
      paymentIntentId: error.payment_intent?.id,
    };
  }
  if (error instanceof Stripe.errors.StripeConnectionError || status === undefined) {
    return { kind: 'ambiguous', reason: `connection: ${error.message}` };
  }
  if (isStillRunning(error)) {
    return { kind: 'in_flight', reason: `http_409_${error.code}` };
  }
  if (isNotVisibleYet(error)) {
    // Retried like any doubt (backoff, bounded by the job's attempts, then `unknown`).
    return { kind: 'ambiguous', reason: `not_visible_yet: http_404_${error.code}` };
  }
  if (status >= 500 || status === 409 || status === 429) {
    return { kind: 'ambiguous', reason: `http_${status}${error.code ? `_${error.code}` : ''}` };
  }
  return {
    kind: 'rejected',
    code:
      error.code ??
      (error instanceof Stripe.errors.StripeIdempotencyError
        ? 'idempotency_error'
        : `http_${status}`),
    message: error.message,
  };
}

/**
 * 409 `idempotency_key_in_use`: the first request is still running at the processor. Not
 * `idempotency_outcome_unknown` (the processor itself does not know and will not find out
 * by waiting): that one counts as ambiguous, and the next attempt retrieves the intent.
 */
function isStillRunning(error: InstanceType<typeof Stripe.errors.StripeError>): boolean {
  return error.statusCode === 409 && error.code === 'idempotency_key_in_use';
}

/**
 * 404 `resource_missing` (Stripe's "No such payment_intent: 'pi_...'"). The worker only names
 * intents the processor returned to it (the recorded one, one adopted from a search), so the
 * object exists: the read went to a replica or cache that has not caught up. Never proof of
 * "not charged" (the intent may have charged a moment ago); ask again later.
 */
function isNotVisibleYet(error: InstanceType<typeof Stripe.errors.StripeError>): boolean {
  return error.statusCode === 404 && error.code === 'resource_missing';
}

/**
 * A 400 `payment_intent_unexpected_state`: the intent was already confirmed or canceled by
 * someone else (an earlier attempt whose answer was lost). Retrieve it and read its state.
 */
export function isUnexpectedIntentState(error: unknown): boolean {
  return (
    error instanceof Stripe.errors.StripeError && error.code === 'payment_intent_unexpected_state'
  );
}
