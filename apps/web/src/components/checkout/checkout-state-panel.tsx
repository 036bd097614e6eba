'use client';

import { useEffect, useRef } from 'react';
import type { CheckoutController } from '../../client/use-checkout.ts';
import { formatMoney } from '../format/money.ts';

/** Stripe's code for a failed 3-D Secure challenge (as `@once/payments` records it). */
const AUTHENTICATION_FAILURE_CODE = 'payment_intent_authentication_failure';

import {
  type CheckoutDisplayState,
  displayState,
  type PaymentStatusName,
  type PaymentStep,
  stepsOf,
} from './checkout-state.ts';

type Tone = 'idle' | 'info' | 'ok' | 'warn' | 'bad';

/**
 * What a "this attempt did not run" answer (503, 429, 401) means for the money: nothing, if
 * no earlier attempt of the intent can have run; otherwise the earlier one is still unknown.
 */
function notRunPrefix(checkout: CheckoutController): string {
  return checkout.locked
    ? 'This attempt was not processed, but an earlier attempt of this payment got no answer, so it may have gone through: the cart stays locked.'
    : 'Nothing was charged.';
}

type Words = { title: string; detail: string; tone: Tone };

/** The states whose words depend on nothing but the state. */
const FIXED_WORDS = {
  idle: {
    title: 'Ready to pay',
    detail:
      'Nothing has been sent yet. Your payment will carry one idempotency key, so it can happen at most once.',
    tone: 'idle',
  },
  key_reused: {
    title: 'This payment key was already used for a different cart',
    detail:
      'The cart changed under the same idempotency key, so the server refused it rather than guess. Nothing new was charged. Start a new payment to pay for this cart.',
    tone: 'bad',
  },
  unknown: {
    title: 'Outcome unknown, being reconciled',
    detail:
      'We could not confirm the charge with the processor yet. It is being reconciled against the processor’s ledger; you will be charged at most once.',
    tone: 'warn',
  },
  requires_action: {
    title: 'Waiting for your bank',
    detail:
      'Your bank asks you to confirm this payment (3-D Secure) on its own page. Nothing is charged until you do; you come back here afterwards, to this same payment.',
    tone: 'info',
  },
  bank_answered: {
    title: 'Back from your bank, confirming with the processor…',
    detail:
      'You answered your bank. This page asks the payment processor what happened (never the link you came back with) and updates by itself. You will be charged at most once.',
    tone: 'info',
  },
  canceled: {
    title: 'Payment abandoned',
    detail:
      'Your bank’s check was not completed in time, so the payment was canceled at the processor. Nothing was charged.',
    tone: 'bad',
  },
} satisfies Partial<Record<CheckoutDisplayState, Words>>;

/** Headline and explanation per state: every state says honestly what happened to the money. */
function describe(state: CheckoutDisplayState, checkout: CheckoutController): Words {
  const flow = checkout.flow;
  const payment = checkout.status.data;
  // Set in the waiting states, the ones that ask again by themselves.
  const secondsLeft = 'secondsLeft' in flow ? flow.secondsLeft : '?';
  switch (state) {
    case 'in_flight':
      return {
        title: 'Sending payment…',
        detail:
          flow.phase === 'in_flight' && flow.attempt > 1
            ? `Attempt ${flow.attempt}, with the same idempotency key: a retry cannot charge twice.`
            : 'Request sent, waiting for the answer.',
        tone: 'info',
      };
    case 'conflict_waiting':
      return {
        title: 'This payment is already being processed',
        detail: `The server is still working on this exact checkout. Asking again in ${secondsLeft} s, with the same key.`,
        tone: 'warn',
      };
    case 'unknown_waiting':
      return {
        title: 'Outcome being confirmed',
        detail: `The result of this payment is being reconciled with the processor. Asking again in ${secondsLeft} s. You will not be charged twice.`,
        tone: 'warn',
      };
    case 'network_retrying':
      return {
        title: 'Connection problem, retrying',
        detail: `No usable answer from the server${
          flow.phase === 'network_retrying' ? ` (${flow.detail})` : ''
        }. Retrying in ${secondsLeft} s with the same key, so the payment can happen at most once.`,
        tone: 'warn',
      };
    case 'outcome_unknown':
      return {
        title: 'Outcome unknown: the payment may have gone through',
        detail:
          flow.phase === 'outcome_unknown'
            ? `No definite answer after ${flow.attempts} attempt${flow.attempts === 1 ? '' : 's'} (${flow.detail}). The server may have received it and may still be charging. Retrying sends the same key, so it can only confirm this payment, never make a second one.`
            : 'This checkout was sent (before a reload, or from another tab) and no answer has reached this page. It may have gone through. Retrying sends the same key, so it can only confirm this payment, never make a second one.',
        tone: 'warn',
      };
    case 'store_unavailable':
    case 'rate_limited': {
      const seconds =
        flow.phase === 'store_unavailable' || flow.phase === 'rate_limited'
          ? flow.retryAfterSeconds
          : undefined;
      const limited = state === 'rate_limited';
      return {
        title: limited ? 'Too many payments at once' : 'Payments are temporarily unavailable',
        detail: `${notRunPrefix(checkout)} Please retry${
          seconds !== undefined ? ` in ${seconds} s` : limited ? ' in a moment' : ' later'
        }.`,
        tone: 'bad',
      };
    }
    case 'unauthenticated':
      return {
        title: 'Your session expired',
        detail: checkout.locked
          ? `${notRunPrefix(checkout)} Reload the page to sign in again.`
          : 'Pick a merchant again. Nothing was charged.',
        tone: 'bad',
      };
    case 'rejected':
      return {
        title: 'The payment was refused',
        // `message` is the checkout's own wording of the refusal's code (classify-pay-error.ts),
        // never the server's text.
        detail: flow.phase === 'rejected' ? `${flow.message}. Nothing was charged.` : '',
        tone: 'bad',
      };
    case 'processing':
      return {
        title: 'Payment accepted, charging your card…',
        detail:
          checkout.status.failureCount > 0
            ? 'Lost contact with the server; still watching this payment.'
            : 'The charge is being made; this page updates by itself.',
        tone: 'info',
      };
    case 'succeeded':
      return {
        title: 'Payment succeeded',
        detail: payment
          ? `Charged ${formatMoney(payment.amount, payment.currency)} once.`
          : 'Charged once.',
        tone: 'ok',
      };
    case 'declined':
      return {
        title: 'Card declined',
        detail: `${payment?.failureMessage ?? 'The card was declined.'}${
          payment?.failureCode ? ` (${payment.failureCode})` : ''
        } Nothing was charged.`,
        tone: 'bad',
      };
    case 'failed':
      if (payment?.failureCode === AUTHENTICATION_FAILURE_CODE) {
        return {
          title: 'Your bank did not confirm this payment',
          detail: `3-D Secure authentication failed (${AUTHENTICATION_FAILURE_CODE}). Nothing was charged. To pay, start a new payment: it gets a new key.`,
          tone: 'bad',
        };
      }
      return {
        title: 'Payment failed',
        detail: `${payment?.failureMessage ?? 'The processor holds no charge.'} Nothing was charged.`,
        tone: 'bad',
      };
    default:
      return FIXED_WORDS[state];
  }
}

const STEP_LABELS: Record<PaymentStep, string> = {
  sent: 'Sent',
  accepted: 'Accepted',
  settled: 'Charged or declined',
};

/** The last step names the outcome once there is one. */
const SETTLED_LABELS: Partial<Record<CheckoutDisplayState, string>> = {
  succeeded: 'Charged',
  declined: 'Declined',
  failed: 'Not charged',
  canceled: 'Not charged',
  requires_action: 'Your bank’s check',
  bank_answered: 'Your bank’s check',
};

/** Sent -> accepted -> settled, drawn as a line of three steps. */
function PaymentSteps({ state, tone }: { state: CheckoutDisplayState; tone: Tone }) {
  const { done, current } = stepsOf(state);
  return (
    <ol className="steps" aria-label="Payment progress">
      {(Object.keys(STEP_LABELS) as PaymentStep[]).map((step) => {
        const status = done.includes(step) ? 'done' : step === current ? 'current' : 'todo';
        return (
          <li
            key={step}
            className={`step step-${status} ${status === 'current' ? `step-${tone}` : ''}`}
            aria-current={status === 'current' ? 'step' : undefined}
          >
            <span className="step-dot" aria-hidden="true" />
            <span className="step-label">
              {step === 'settled'
                ? (SETTLED_LABELS[state] ?? STEP_LABELS.settled)
                : STEP_LABELS[step]}
              <span className="visually-hidden">
                {status === 'done' ? ' (done)' : status === 'current' ? ' (in progress)' : ''}
              </span>
            </span>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * The payment's state, the centre of the checkout: one live region with one `data-state`,
 * the progress line, and the actions the state allows.
 */
export function CheckoutStatePanel({
  checkout,
  returnedFromBank = false,
}: {
  checkout: CheckoutController;
  /** Rendered by the 3-D Secure return page: the shopper is back from the bank's challenge. */
  returnedFromBank?: boolean;
}) {
  const status = checkout.status.data?.status as PaymentStatusName | undefined;
  const state = displayState(checkout.flow, status, {
    watching: checkout.watched !== undefined,
    unconfirmed: checkout.unconfirmed,
    returnedFromBank,
  });
  const challengeUrl =
    state === 'requires_action' ? checkout.status.data?.nextAction?.url : undefined;
  const { title, detail, tone } = describe(state, checkout);
  // One column (phone): the panel sits below the form. When the state changes, bring it
  // into view by scrolling, not by moving it up: nothing on the page shifts.
  const panel = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (state !== 'idle') panel.current?.scrollIntoView({ block: 'nearest' });
  }, [state]);
  const retryable =
    !checkout.requestInFlight &&
    (state === 'outcome_unknown' || state === 'store_unavailable' || state === 'rate_limited');
  return (
    <div className={`status status-${tone}`} ref={panel}>
      <section
        className="status-body"
        role="status"
        aria-live="polite"
        aria-labelledby="checkout-state-title"
        data-testid="checkout-state"
        data-state={state}
        data-payment-id={checkout.watched?.paymentId ?? ''}
        data-idempotency-key={checkout.activeKey ?? ''}
      >
        <PaymentSteps state={state} tone={tone} />
        <h2 id="checkout-state-title" className="status-title" data-testid="checkout-state-title">
          {title}
        </h2>
        <p className="status-detail">{detail}</p>
        {checkout.locked && !checkout.terminal ? (
          <p className="lock-note" data-testid="intent-locked">
            <span className="pill">Locked</span> Cart and card belong to this payment until its
            outcome is known.
          </p>
        ) : null}
        {checkout.watched?.replayed ? (
          <p className="replayed" data-testid="replayed-notice">
            You were not charged twice: the server recognised this checkout and returned the payment
            it already made.
          </p>
        ) : null}
        {checkout.watched && checkout.flow.phase === 'conflict_waiting' ? (
          <p className="muted small" data-testid="conflict-countdown">
            A second request for this same checkout is waiting {checkout.flow.secondsLeft} s (the
            server's Retry-After) to confirm it; it carries the same key and cannot charge again.
          </p>
        ) : null}
        <dl className="meta">
          {checkout.activeKey ? (
            <>
              <dt>Idempotency-Key</dt>
              <dd>
                <code data-testid={checkout.unconfirmed ? 'unfinished-intent' : undefined}>
                  {checkout.activeKey}
                </code>
              </dd>
            </>
          ) : null}
          {checkout.watched ? (
            <>
              <dt>Payment</dt>
              <dd>
                <code>{checkout.watched.paymentId}</code>
                {checkout.watched.resumed ? ' (resumed after reload or from another tab)' : ''}
              </dd>
            </>
          ) : null}
        </dl>
      </section>
      <div className="status-actions">
        {challengeUrl ? (
          // A real navigation to the bank's page, which sends the shopper back to the return page.
          <button
            type="button"
            className="primary"
            data-testid="go-to-bank"
            onClick={() => window.location.assign(challengeUrl)}
          >
            Continue to your bank
          </button>
        ) : null}
        {retryable ? (
          <button
            type="button"
            className="primary"
            data-testid="retry"
            onClick={() => void checkout.pay()}
          >
            {state === 'outcome_unknown' ? 'Check payment (retry, same key)' : 'Retry (same key)'}
          </button>
        ) : null}
        {state === 'key_reused' ? (
          <button
            type="button"
            data-testid="new-payment"
            onClick={() => checkout.startOver({ newKeyForSameCart: true })}
          >
            Start a new payment
          </button>
        ) : null}
        {checkout.terminal ? (
          <button type="button" data-testid="new-purchase" onClick={() => checkout.startOver()}>
            {state === 'succeeded' ? 'New purchase' : 'Try again (new payment)'}
          </button>
        ) : null}
      </div>
    </div>
  );
}
