import { timingSafeEqual } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { ProcessorTransaction } from '../db/client.ts';
import { paymentIntents } from '../db/schema/index.ts';
import type { OperationTiming } from '../stripe/stripe-operation.ts';
import { chargePaymentIntent, updateAndAnnounce } from './charge-payment-intent.ts';

type PaymentIntentRow = typeof paymentIntents.$inferSelect;

/** The shopper's answer on the hosted 3-D Secure page. */
export type ChallengeAnswer = 'complete' | 'fail';

/**
 * Applies the shopper's answer to an intent's 3-D Secure challenge, holding its row lock:
 * `complete` goes on to the charge (or the authorisation, for manual capture) exactly as a
 * confirm of an authenticated card would, booked under the confirm's Idempotency-Key; `fail`
 * leaves the intent `requires_payment_method` with Stripe's
 * `payment_intent_authentication_failure`, its payment method detached. An intent no longer
 * `requires_action` (answered already, canceled) is returned as it is: a second answer, a
 * reload or a back button changes nothing. Undefined when the id and client secret do not match.
 *
 * @example
 * const intent = await answerChallenge(tx, { id, clientSecret, answer: 'complete' }, settings);
 */
export async function answerChallenge(
  tx: ProcessorTransaction,
  challenge: { id: string; clientSecret: string; answer: ChallengeAnswer },
  settings: { timing: OperationTiming; challengeBaseUrl: string },
): Promise<PaymentIntentRow | undefined> {
  const intent = await loadByClientSecret(tx, challenge.id, challenge.clientSecret);
  if (intent?.status !== 'requires_action') return intent;
  const idempotencyKey = intent.actionIdempotencyKey;
  if (challenge.answer === 'complete') {
    await chargePaymentIntent(tx, intent, { ...settings, idempotencyKey, authenticated: true });
  } else {
    await updateAndAnnounce(
      tx,
      intent,
      {
        status: 'requires_payment_method',
        paymentMethod: null,
        cardNumber: null,
        nextAction: null,
        actionIdempotencyKey: null,
        lastPaymentError: authenticationFailure(intent),
      },
      'payment_intent.payment_failed',
      idempotencyKey,
    );
  }
  return loadByClientSecret(tx, challenge.id, challenge.clientSecret);
}

/**
 * The intent whose client secret this is (the hosted page's only credential, as Stripe's
 * hosted pages carry it), locked for update.
 */
export async function loadByClientSecret(
  tx: ProcessorTransaction,
  id: string,
  clientSecret: string,
): Promise<PaymentIntentRow | undefined> {
  const [intent] = await tx
    .select()
    .from(paymentIntents)
    .where(eq(paymentIntents.id, id))
    .for('update');
  if (!intent) return undefined;
  const [given, stored] = [Buffer.from(clientSecret), Buffer.from(intent.clientSecret)];
  return given.length === stored.length && timingSafeEqual(given, stored) ? intent : undefined;
}

function authenticationFailure(intent: PaymentIntentRow): Record<string, unknown> {
  return {
    type: 'invalid_request_error',
    code: 'payment_intent_authentication_failure',
    message:
      'The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.',
    doc_url: 'https://stripe.com/docs/error-codes/payment-intent-authentication-failure',
    payment_method: { id: intent.paymentMethod, object: 'payment_method', type: 'card' },
  };
}
