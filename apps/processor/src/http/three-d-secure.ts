import { timingSafeEqual } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { Hono } from 'hono';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { type PaymentIntentRow, paymentIntents } from '../db/schema/index.ts';
import { chargePaymentIntent, updateAndAnnounce } from '../payments/charge-payment-intent.ts';
import type { OperationTiming } from '../stripe/stripe-operation.ts';
import type { StripeApiOptions } from './stripe-api.ts';

/** After the challenge, as Stripe redirects: these query parameters on the `return_url`. */
function returnTo(intent: PaymentIntentRow & { returnUrl: string }) {
  const url = new URL(intent.returnUrl);
  url.searchParams.set('payment_intent', intent.id);
  url.searchParams.set('payment_intent_client_secret', intent.clientSecret);
  const paid = ['succeeded', 'requires_capture', 'processing'].includes(intent.status);
  url.searchParams.set('redirect_status', paid ? 'succeeded' : 'failed');
  return url.toString();
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;

const notFound = () =>
  new Response(page('No such authentication', '<p>This link is not valid.</p>'), {
    status: 404,
    headers: { 'content-type': 'text/html; charset=utf-8' },
  });

/**
 * The hosted 3-D Secure challenge `next_action` sends a shopper to, "Complete" or "Fail" as on
 * Stripe's test page, then a 303 to the intent's `return_url`. The client secret in the link
 * is the only credential, as on Stripe's hosted pages.
 */
export function createThreeDSecurePages(
  options: Omit<StripeApiOptions, 'idempotentMutation'>,
): Hono {
  const { db, log } = options;
  const app = new Hono();

  app.get('/three_d_secure/:id', async (c) => {
    const id = c.req.param('id');
    const clientSecret = c.req.query('client_secret') ?? '';
    // Read only: showing the page takes no lock.
    const intent = await findByClientSecret(db, id, clientSecret);
    if (!intent) return notFound();
    if (intent.status !== 'requires_action') {
      const back = intent.returnUrl
        ? `<p><a href="${escapeHtml(returnTo({ ...intent, returnUrl: intent.returnUrl }))}">Return to the merchant</a></p>`
        : '';
      return c.html(page('Authentication finished', `<p>Nothing is left to do here.</p>${back}`));
    }
    const amount = `${(intent.amount / 100).toFixed(2)} ${intent.currency.toUpperCase()}`;
    const form = (answer: string, label: string) =>
      `<form method="post" action="/three_d_secure/${escapeHtml(id)}"><input type="hidden" name="client_secret" value="${escapeHtml(clientSecret)}"><input type="hidden" name="answer" value="${answer}"><button type="submit">${label}</button></form>`;
    return c.html(
      page(
        '3D Secure test payment',
        `<p>Authenticate a payment of ${escapeHtml(amount)}.</p>${form('complete', 'Complete authentication')}${form('fail', 'Fail authentication')}`,
      ),
    );
  });

  app.post('/three_d_secure/:id', async (c) => {
    const id = c.req.param('id');
    const form = new URLSearchParams(await c.req.text());
    const answer = form.get('answer');
    if (answer !== 'complete' && answer !== 'fail') return notFound();
    const challengeBaseUrl = options.publicUrl ?? new URL(c.req.url).origin;
    const intent = await db.transaction((tx) =>
      answerChallenge(
        tx,
        { id, clientSecret: form.get('client_secret') ?? '', answer },
        { timing: options.timing, challengeBaseUrl },
      ),
    );
    if (!intent) return notFound();
    log(`3ds: ${answer} on ${id} -> ${intent.status}`);
    if (intent.returnUrl)
      return c.redirect(returnTo({ ...intent, returnUrl: intent.returnUrl }), 303);
    return c.html(page('Authentication finished', '<p>You can close this page.</p>'));
  });

  return app;
}

/**
 * Applies the shopper's answer to an intent's 3-D Secure challenge, holding its row lock:
 * `complete` goes on to the charge (or the authorisation, for manual capture) exactly as a
 * confirm of an authenticated card would, booked under the confirm's Idempotency-Key; `fail`
 * leaves the intent `requires_payment_method` with Stripe's
 * `payment_intent_authentication_failure`, its payment method detached. An intent no longer
 * `requires_action` (answered already, canceled) is returned as it is: a second answer, a
 * reload or a back button changes nothing. Undefined when the id and client secret do not match.
 */
async function answerChallenge(
  tx: ProcessorTransaction,
  challenge: { id: string; clientSecret: string; answer: 'complete' | 'fail' },
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
        lastPaymentError: {
          type: 'invalid_request_error',
          code: 'payment_intent_authentication_failure',
          message:
            'The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.',
          doc_url: 'https://stripe.com/docs/error-codes/payment-intent-authentication-failure',
          payment_method: { id: intent.paymentMethod, object: 'payment_method', type: 'card' },
        },
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
async function findByClientSecret(
  db: ProcessorTransaction | ProcessorDatabase,
  id: string,
  clientSecret: string,
): Promise<PaymentIntentRow | undefined> {
  const [intent] = await db.select().from(paymentIntents).where(eq(paymentIntents.id, id));
  if (!intent) return undefined;
  const [given, stored] = [Buffer.from(clientSecret), Buffer.from(intent.clientSecret)];
  return given.length === stored.length && timingSafeEqual(given, stored) ? intent : undefined;
}
