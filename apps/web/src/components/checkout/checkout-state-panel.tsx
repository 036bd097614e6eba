'use client';

import type { CheckoutController } from '../../client/use-checkout.ts';
import { formatMoney } from '../format/money.ts';
import {
  type CheckoutDisplayState,
  displayState,
  type PaymentStatusName,
} from './checkout-state.ts';

/** Headline and explanation per state: every state says honestly what happened to the money. */
function describe(
  state: CheckoutDisplayState,
  checkout: CheckoutController,
): { title: string; detail: string; tone: 'info' | 'ok' | 'warn' | 'bad' } {
  const flow = checkout.flow;
  const payment = checkout.status.data;
  switch (state) {
    case 'idle':
      return { title: 'Ready to pay', detail: 'Nothing has been sent yet.', tone: 'info' };
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
        detail: `The server is still working on this exact checkout. Asking again in ${
          flow.phase === 'conflict_waiting' ? flow.secondsLeft : '?'
        } s, with the same key.`,
        tone: 'warn',
      };
    case 'unknown_waiting':
      return {
        title: 'Outcome being confirmed',
        detail: `The result of this payment is being reconciled with the processor. Asking again in ${
          flow.phase === 'unknown_waiting' ? flow.secondsLeft : '?'
        } s. You will not be charged twice.`,
        tone: 'warn',
      };
    case 'network_retrying':
      return {
        title: 'Connection problem, retrying',
        detail: `No answer from the server (${flow.phase === 'network_retrying' ? flow.detail : ''}). Retrying in ${
          flow.phase === 'network_retrying' ? flow.secondsLeft : '?'
        } s with the same key, so the payment can happen at most once.`,
        tone: 'warn',
      };
    case 'network_failed':
      return {
        title: 'We could not reach the server',
        detail:
          'Your payment may or may not have been received. Retrying is safe: it uses the same key, so you cannot be charged twice.',
        tone: 'bad',
      };
    case 'key_reused':
      return {
        title: 'This payment key was already used for a different cart',
        detail:
          'The cart changed under the same idempotency key, so the server refused it rather than guess. Nothing new was charged. Start a new payment to pay for this cart.',
        tone: 'bad',
      };
    case 'store_unavailable':
      return {
        title: 'Payments are temporarily unavailable',
        detail: `Nothing was charged. Please retry${
          flow.phase === 'store_unavailable' && flow.retryAfterSeconds !== undefined
            ? ` in ${flow.retryAfterSeconds} s`
            : ' later'
        }.`,
        tone: 'bad',
      };
    case 'rate_limited':
      return {
        title: 'Too many payments at once',
        detail: `Nothing was charged. Please retry${
          flow.phase === 'rate_limited' && flow.retryAfterSeconds !== undefined
            ? ` in ${flow.retryAfterSeconds} s`
            : ' in a moment'
        }.`,
        tone: 'bad',
      };
    case 'unauthenticated':
      return {
        title: 'Your session expired',
        detail: 'Pick a merchant again. Nothing was charged.',
        tone: 'bad',
      };
    case 'rejected':
      return {
        title: 'The payment was refused',
        detail:
          flow.phase === 'rejected' ? `${flow.message} (${flow.code}). Nothing was charged.` : '',
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
    case 'unknown':
      return {
        title: 'Outcome unknown, being reconciled',
        detail:
          'We could not confirm the charge with the processor yet. It is being reconciled against the processor’s ledger; you will be charged at most once.',
        tone: 'warn',
      };
    case 'failed':
      return {
        title: 'Payment failed',
        detail: `${payment?.failureMessage ?? 'The processor holds no charge.'} Nothing was charged.`,
        tone: 'bad',
      };
  }
}

/** The live status of the checkout: one region, one `data-state`. */
export function CheckoutStatePanel({ checkout }: { checkout: CheckoutController }) {
  const status = checkout.status.data?.status as PaymentStatusName | undefined;
  const state = displayState(checkout.flow, status, checkout.watched !== undefined);
  const { title, detail, tone } = describe(state, checkout);
  const retryable =
    state === 'network_failed' || state === 'store_unavailable' || state === 'rate_limited';
  return (
    <section
      className={`card state state-${tone}`}
      role="status"
      aria-live="polite"
      data-testid="checkout-state"
      data-state={state}
      data-payment-id={checkout.watched?.paymentId ?? ''}
      data-idempotency-key={checkout.activeKey ?? ''}
    >
      <h2 data-testid="checkout-state-title">{title}</h2>
      <p>{detail}</p>
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
      {checkout.watched ? (
        <p className="muted small">
          Payment <code>{checkout.watched.paymentId}</code>
          {checkout.watched.resumed ? ' (resumed after reload)' : ''}
        </p>
      ) : null}
      {checkout.activeKey ? (
        <p className="muted small">
          Idempotency-Key <code>{checkout.activeKey}</code>
        </p>
      ) : null}
      <div className="row">
        {retryable ? (
          <button type="button" data-testid="retry" onClick={() => void checkout.pay()}>
            Retry (same key)
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
    </section>
  );
}
