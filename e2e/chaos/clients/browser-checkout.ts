import { type ClientContext, type History, type IntentPlan, paymentMethodOf } from '@once/chaos';
import type { Browser, BrowserContext, Request } from '@playwright/test';
import { meetChallengeInPage } from './three-d-secure-page.ts';

/** The card numbers the checkout page lists for Stripe's test PaymentMethods. */
const CARD_NUMBER_OF: Record<ReturnType<typeof paymentMethodOf>, string> = {
  pm_card_visa: '4242424242424242',
  pm_card_chargeDeclined: '4000000000000002',
  pm_card_chargeDeclinedInsufficientFunds: '4000000000009995',
  pm_card_threeDSecure2Required: '4000000000003220',
};

/** States after which the page shows a definite end. */
const TERMINAL = new Set(['succeeded', 'declined', 'failed', 'canceled']);
/** States in which the page offers Retry (`checkout-state-panel.tsx`, `retryable`). */
const NEEDS_RETRY = new Set(['outcome_unknown', 'store_unavailable', 'rate_limited']);

export interface BrowserClientContext extends ClientContext {
  /**
   * Every open page's context, so the run can close the pages of customers still busy when
   * it gives up on them: no request may leave after the databases are read.
   */
  openContexts?: Set<BrowserContext>;
}

/**
 * One customer in a real Chromium page: signs in as the tenant, fills the cart, picks the
 * Stripe test card, clicks Pay (twice or three times fast for a double submit), may lose the
 * first answer (`route.fetch()` then `route.abort()`: the server processed it, the page never
 * sees it), may reload mid-payment, answers (or leaves) the bank's 3-D Secure challenge,
 * presses Retry when the page asks, gives up when the plan
 * says so. Each `checkout.pay` request the page sends is recorded from the network, and the
 * state the page showed last is recorded as a `status` op.
 */
export async function runBrowserIntent(
  browser: Browser,
  plan: IntentPlan,
  ctx: BrowserClientContext,
): Promise<{ shown?: string; key?: string; paymentId?: string }> {
  const context = await browser.newContext();
  ctx.openContexts?.add(context);
  // Library mode has no default timeout: a locator that never appears would wait forever.
  context.setDefaultTimeout(15_000);
  context.setDefaultNavigationTimeout(30_000);
  const page = await context.newPage();
  const process = 'client-browser';
  const base = { intent: plan.id, tenantId: plan.tenantId, process };
  const open = new Map<Request, ReturnType<History['invoke']>>();
  let keySeen = '';
  const lostOnce: { used: boolean; request?: Request } = { used: false };
  page.on('request', (request) => {
    if (request.method() !== 'POST' || !request.url().includes('/api/trpc/checkout.pay')) return;
    keySeen = request.headers()['idempotency-key'] ?? keySeen;
    open.set(request, ctx.history.invoke({ ...base, key: keySeen, f: 'pay' }));
  });
  /** The request's open history entry, taken so that it is completed once. */
  const take = (request: Request) => {
    const complete = open.get(request);
    open.delete(request);
    return complete;
  };
  page.on('requestfinished', async (request) => {
    const complete = take(request);
    if (!complete) return;
    const response = await request.response().catch(() => null);
    const status = response?.status() ?? 0;
    const headers = response ? await response.allHeaders().catch(() => ({})) : {};
    const body = response ? await response.json().catch(() => undefined) : undefined;
    const paymentId = (body as { result?: { data?: { paymentId?: string } } } | undefined)?.result
      ?.data?.paymentId;
    const type =
      status >= 200 && status < 300 && paymentId
        ? 'ok'
        : [400, 401, 409, 422, 429, 503].includes(status)
          ? 'fail'
          : 'info';
    complete(type, {
      status,
      paymentId,
      replayed: (headers as Record<string, string>)['idempotent-replayed'] === 'true',
    });
  });
  page.on('requestfailed', (request) => {
    take(request)?.('info', {
      error: request.failure()?.errorText ?? 'failed',
      lostResponse: lostOnce.used && lostOnce.request === request,
    });
  });
  try {
    // A customer who finds the shop down (the nemesis killed web) reloads a little later.
    for (let attempt = 1; ; attempt++) {
      try {
        await page.goto(ctx.webUrl(), { timeout: 30_000 });
        break;
      } catch (error) {
        if (attempt >= 10 || ctx.history.elapsed() > ctx.deadlineAt()) throw error;
        await ctx.sleep(2_000);
      }
    }
    await page.getByTestId(`merchant-${plan.tenantId}`).click({ timeout: 30_000 });
    await page.getByTestId('merchant-name').waitFor({ timeout: 30_000 });
    for (const line of plan.lines) {
      await page.getByTestId(`quantity-${line.productId}`).fill(String(line.quantity));
    }
    await page.getByTestId(`card-${CARD_NUMBER_OF[paymentMethodOf(plan)]}`).check();
    // A customer this slow to get to Pay (a loaded machine, the shop down) leaves instead.
    if (ctx.history.elapsed() > ctx.deadlineAt()) throw new Error('gave up before paying');
    if (plan.loseFirstResponse) {
      await page.route('**/api/trpc/checkout.pay**', async (route) => {
        if (lostOnce.used) return route.continue();
        lostOnce.used = true;
        lostOnce.request = route.request();
        // The server processes the request and answers; the page never receives it.
        await route.fetch().catch(() => undefined);
        await route.abort('connectionreset');
      });
    }
    const pay = page.getByTestId('pay');
    await pay.click({ timeout: 30_000 });
    for (let i = 1; i < plan.submits; i++)
      await pay.click({ timeout: 1_000, force: true }).catch(() => {});
    if (plan.reloadMidPayment) {
      await ctx.sleep(300);
      await page.reload({ timeout: 30_000 });
    }

    let retries = 0;
    let challenged = false;
    const state = page.getByTestId('checkout-state');
    const shownAs = (attribute: string) =>
      state.getAttribute(attribute, { timeout: 5_000 }).catch(() => null);
    while (ctx.history.elapsed() < ctx.deadlineAt()) {
      const current = (await shownAs('data-state')) ?? '';
      if (TERMINAL.has(current)) break;
      // The bank's challenge, once; a shopper who leaves it closes the tab there.
      if (current === 'requires_action' && plan.challenge && !challenged) {
        challenged = true;
        const paymentId = (await shownAs('data-payment-id')) || undefined;
        await meetChallengeInPage(page, plan.challenge, {
          history: ctx.history,
          webUrl: ctx.webUrl(),
          base: { ...base, key: keySeen },
          paymentId,
        });
        if (plan.challenge.answer === 'leave') break;
        continue;
      }
      // After a reload the page offers the unfinished intent again (same key): pay it.
      const idle = current === 'idle' && (await pay.isEnabled().catch(() => false));
      if (NEEDS_RETRY.has(current) || idle) {
        if (retries >= plan.giveUpAfterAttempts) break;
        retries++;
        await page
          .getByTestId('retry')
          .click({ timeout: 5_000 })
          .catch(() => {});
      }
      await ctx.sleep(500);
    }
    const shown = (await shownAs('data-state')) ?? undefined;
    const key = (await shownAs('data-idempotency-key')) || keySeen;
    const paymentId = (await shownAs('data-payment-id')) || undefined;
    const complete = ctx.history.invoke({ ...base, key, f: 'status' });
    if (shown && paymentId) complete('ok', { state: shown, paymentId });
    else complete('info', { state: shown, error: 'page showed no payment' });
    return { shown, key, paymentId };
  } catch (error) {
    const complete = ctx.history.invoke({ ...base, key: keySeen, f: 'status' });
    complete('info', { error: `browser: ${(error as Error).message.split('\n')[0]}` });
    return { key: keySeen };
  } finally {
    for (const [, complete] of open) complete('info', { error: 'page closed' });
    open.clear();
    ctx.openContexts?.delete(context);
    await context.close().catch(() => {});
  }
}
