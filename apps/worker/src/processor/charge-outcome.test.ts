import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import {
  outcomeOfChargeError,
  outcomeOfPaymentIntent,
  settledOutcomeOf,
} from './charge-outcome.ts';

const raw = (fields: Record<string, unknown>) => fields as never;

describe('outcomeOfPaymentIntent', () => {
  it('maps succeeded to succeeded with the intent id', () => {
    expect(outcomeOfPaymentIntent({ id: 'pi_1', status: 'succeeded' })).toEqual({
      kind: 'succeeded',
      paymentIntentId: 'pi_1',
    });
  });
  it('maps a returned decline to declined with the decline code', () => {
    expect(
      outcomeOfPaymentIntent({
        id: 'pi_2',
        status: 'requires_payment_method',
        last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds' },
      }),
    ).toMatchObject({ kind: 'declined', code: 'insufficient_funds', paymentIntentId: 'pi_2' });
  });
  it('treats an intent still processing as in flight (never a failure)', () => {
    expect(outcomeOfPaymentIntent({ id: 'pi_3', status: 'processing' }).kind).toBe('in_flight');
  });
  it('treats a canceled intent without an error as proof of no charge', () => {
    expect(outcomeOfPaymentIntent({ id: 'pi_4', status: 'canceled' })).toEqual({
      kind: 'canceled',
      paymentIntentId: 'pi_4',
    });
  });
  it('leaves an intent waiting for its confirm undecided', () => {
    expect(settledOutcomeOf({ id: 'pi_5', status: 'requires_confirmation' })).toBeNull();
    expect(outcomeOfPaymentIntent({ id: 'pi_5', status: 'requires_confirmation' }).kind).toBe(
      'ambiguous',
    );
  });
});

describe('outcomeOfChargeError', () => {
  it('402 card error is a definite decline, not retried', () => {
    const error = new Stripe.errors.StripeCardError(
      raw({
        statusCode: 402,
        code: 'card_declined',
        decline_code: 'generic_decline',
        message: 'no',
      }),
    );
    expect(outcomeOfChargeError(error)).toMatchObject({
      kind: 'declined',
      code: 'generic_decline',
    });
  });
  it.each([
    [
      'connection error',
      new Stripe.errors.StripeConnectionError(raw({ message: 'socket hang up' })),
    ],
    ['500', new Stripe.errors.StripeAPIError(raw({ statusCode: 500, message: 'boom' }))],
    ['503', new Stripe.errors.StripeAPIError(raw({ statusCode: 503, message: 'busy' }))],
    ['429', new Stripe.errors.StripeRateLimitError(raw({ statusCode: 429, message: 'slow down' }))],
    ['a non-Stripe error', new TypeError('fetch failed')],
  ])('%s is ambiguous (retried with the same key)', (_name, error) => {
    expect(outcomeOfChargeError(error).kind).toBe('ambiguous');
  });
  it('409 idempotency_key_in_use is in flight: the first request still runs at the processor', () => {
    const error = new Stripe.errors.StripeAPIError(
      raw({ statusCode: 409, code: 'idempotency_key_in_use', message: 'in use' }),
    );
    expect(outcomeOfChargeError(error).kind).toBe('in_flight');
  });
  it('409 idempotency_outcome_unknown is ambiguous: waiting would not tell', () => {
    const error = new Stripe.errors.StripeAPIError(
      raw({ statusCode: 409, code: 'idempotency_outcome_unknown', message: 'unknown' }),
    );
    expect(outcomeOfChargeError(error).kind).toBe('ambiguous');
  });
  it('an intent waiting for the shopper (requires_action) ends the job with the challenge URL, never retried', () => {
    const url = 'https://processor.example/three_d_secure/pi_6?client_secret=pi_6_secret';
    expect(
      outcomeOfPaymentIntent({
        id: 'pi_6',
        status: 'requires_action',
        next_action: { type: 'redirect_to_url', redirect_to_url: { url } },
      }),
    ).toEqual({ kind: 'requires_action', paymentIntentId: 'pi_6', nextActionUrl: url });
    // No page to send the shopper to (no return_url was given): still the shopper's turn.
    expect(
      outcomeOfPaymentIntent({
        id: 'pi_7',
        status: 'requires_action',
        next_action: { type: 'use_stripe_sdk' },
      }),
    ).toEqual({ kind: 'requires_action', paymentIntentId: 'pi_7', nextActionUrl: null });
  });
  it('a failed 3-D Secure challenge is an authentication failure, not a decline', () => {
    expect(
      outcomeOfPaymentIntent({
        id: 'pi_8',
        status: 'requires_payment_method',
        last_payment_error: { code: 'payment_intent_authentication_failure', message: 'failed' },
      }),
    ).toEqual({
      kind: 'authentication_failed',
      code: 'payment_intent_authentication_failure',
      message: 'failed',
      paymentIntentId: 'pi_8',
    });
  });
  it('a 400 idempotency_error is rejected (the reconciler decides)', () => {
    const error = new Stripe.errors.StripeIdempotencyError(
      raw({ statusCode: 400, type: 'idempotency_error', message: 'reused' }),
    );
    expect(outcomeOfChargeError(error)).toMatchObject({
      kind: 'rejected',
      code: 'idempotency_error',
    });
  });
  it('a 404 resource_missing on an id the processor gave us is ambiguous: not visible yet', () => {
    const error = new Stripe.errors.StripeInvalidRequestError(
      raw({ statusCode: 404, code: 'resource_missing', message: "No such payment_intent: 'pi_1'" }),
    );
    expect(outcomeOfChargeError(error)).toMatchObject({
      kind: 'ambiguous',
      reason: 'not_visible_yet: http_404_resource_missing',
    });
  });
  it('a 401 is rejected', () => {
    const error = new Stripe.errors.StripeAuthenticationError(
      raw({ statusCode: 401, message: 'bad key' }),
    );
    expect(outcomeOfChargeError(error)).toMatchObject({ kind: 'rejected', code: 'http_401' });
  });
});
