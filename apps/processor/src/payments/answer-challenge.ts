import { timingSafeEqual } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { type PaymentIntentRow, paymentIntents } from '../db/schema/index.ts';
import type { OperationTiming } from '../stripe/stripe-operation.ts';
import { chargePaymentIntent, updateAndAnnounce } from './charge-payment-intent.ts';

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
 * hosted pages carry it), locked for update. The secret is checked on a plain read first: a
 * request with a wrong one never takes the lock, so it cannot hold up the shopper's answer or
 * the worker's confirm, and never learns more than "not found".
 */
async function loadByClientSecret(
  tx: ProcessorTransaction,
  id: string,
  clientSecret: string,
): Promise<PaymentIntentRow | undefined> {
  if (!(await findByClientSecret(tx, id, clientSecret))) return undefined;
  // The secret never changes, so the locked row is the intent just matched.
  const [intent] = await tx
    .select()
    .from(paymentIntents)
    .where(eq(paymentIntents.id, id))
    .for('update');
  return intent;
}

/**
 * The intent whose client secret this is, as it reads now (no lock): what the challenge page
 * shows. Undefined for an unknown id and for a wrong secret alike.
 */
export async function findByClientSecret(
  db: ProcessorTransaction | ProcessorDatabase,
  id: string,
  clientSecret: string,
): Promise<PaymentIntentRow | undefined> {
  const [intent] = await db.select().from(paymentIntents).where(eq(paymentIntents.id, id));
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
