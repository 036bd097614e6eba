import type { ClientContext, IntentPlan } from '@once/chaos';

/** How long one request to the bank's page or the return page may take. */
const PAGE_TIMEOUT_MS = 8_000;

/**
 * An HTTP shopper at the bank's 3-D Secure challenge, as a browser would go through it: opens
 * the processor's hosted page (`nextAction.url`), posts the planned answer (the form's
 * `answer` and `client_secret`) and follows the 303 to the web app's return page. A lost
 * redirect is read and dropped; the shopper then opens the bank's page again, which offers
 * the way back, and asks the return page from there. `leave`: nothing is sent. Network
 * errors and 5xx are retried until the clients' deadline (a second answer changes nothing
 * at the processor). Recorded as one `challenge` op: `ok` once the processor took the answer
 * (or the shopper left), `info` when it never answered.
 */
export async function meetChallengeOverHttp(
  plan: IntentPlan & { challenge: NonNullable<IntentPlan['challenge']> },
  at: { paymentId: string; url: string | undefined },
  ctx: ClientContext,
): Promise<void> {
  const { answer, loseRedirect } = plan.challenge;
  const complete = ctx.history.invoke({
    intent: plan.id,
    tenantId: plan.tenantId,
    key: plan.key,
    process: `client-${plan.transport}`,
    f: 'challenge',
  });
  const detail = { paymentId: at.paymentId, answer };
  if (answer === 'leave' || !at.url) {
    if (answer === 'leave') complete('ok', detail);
    else complete('info', { ...detail, error: 'no challenge url' });
    return;
  }
  const challenge = new URL(at.url);
  const form = new URLSearchParams({
    client_secret: challenge.searchParams.get('client_secret') ?? '',
    answer,
  });
  const posted = await untilAnswered(ctx, async () => {
    const page = await request(challenge.toString());
    if (!page.ok) return page;
    return request(`${challenge.origin}${challenge.pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
  });
  if (posted?.status !== 303 || !posted.location) {
    complete('info', { ...detail, status: posted?.status, error: 'challenge not answered' });
    return;
  }
  let back: string | undefined = posted.location;
  if (loseRedirect) {
    // The redirect never arrives: the bank's page, opened again, links back to the merchant.
    const again = await untilAnswered(ctx, () => request(challenge.toString()));
    back = /href="([^"]+)"/.exec(again?.body ?? '')?.[1]?.replaceAll('&#38;', '&');
  }
  const returned = back ? await untilAnswered(ctx, () => request(back!)) : undefined;
  complete('ok', {
    ...detail,
    status: returned?.status ?? posted.status,
    ...(loseRedirect ? { lostResponse: true } : {}),
  });
}

type PageAnswer = Awaited<ReturnType<typeof request>>;

/** One request of the shopper's browser, redirects not followed; status 0: no answer. */
async function request(url: string, init: RequestInit = {}) {
  try {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      signal: AbortSignal.timeout(PAGE_TIMEOUT_MS),
    });
    const body = await response.text();
    const location = response.headers.get('location') ?? undefined;
    return { ok: response.status < 500, status: response.status, location, body };
  } catch {
    return { ok: false, status: 0 };
  }
}

/** Tries again after a short pause while there is no answer (or a 5xx), until the deadline. */
async function untilAnswered(
  ctx: ClientContext,
  send: () => Promise<PageAnswer>,
): Promise<PageAnswer | undefined> {
  for (let pauseMs = 500; ctx.history.elapsed() < ctx.deadlineAt(); pauseMs = 2 * pauseMs) {
    const answer = await send();
    if (answer.ok) return answer;
    await ctx.sleep(Math.min(pauseMs, 3_000));
  }
  return undefined;
}
