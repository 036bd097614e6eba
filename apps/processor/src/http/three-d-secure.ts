import { Hono } from 'hono';
import { answerChallenge, findByClientSecret } from '../payments/answer-challenge.ts';
import type { StripeApiOptions } from './stripe-api.ts';

/** After the challenge, as Stripe redirects: these query parameters on the `return_url`. */
function returnTo(intent: { id: string; clientSecret: string; status: string; returnUrl: string }) {
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
