import type { History, IntentPlan } from '@once/chaos';
import type { Page } from '@playwright/test';

/**
 * A browser shopper at the bank's 3-D Secure challenge: presses "Continue to your bank", and
 * on the processor's hosted page presses "Complete" or "Fail authentication"; `leave`: goes
 * no further (the tab is closed). A lost redirect is the answer taken by the processor and
 * dropped before the browser (`route.fetch()` then `route.abort()`, as the 3-D Secure spec
 * does); the shopper then opens the return page it never got. When the bank's page cannot be
 * used (the processor down), the shopper goes back to the shop's return page, which shows
 * the payment until the reconciler ends it. Recorded as one `challenge` op: `ok` once the
 * answer was taken (or the shopper left), `info` otherwise.
 */
export async function meetChallengeInPage(
  page: Page,
  challenge: NonNullable<IntentPlan['challenge']>,
  ctx: {
    history: History;
    webUrl: string;
    base: { intent: string; tenantId: string; key: string; process: string };
    paymentId: string | undefined;
  },
): Promise<void> {
  const complete = ctx.history.invoke({ ...ctx.base, f: 'challenge' });
  const detail = { answer: challenge.answer, paymentId: ctx.paymentId };
  if (challenge.answer === 'leave') {
    complete('ok', detail);
    return;
  }
  let returnUrl: string | undefined;
  let answerFailed = false;
  try {
    await page.getByTestId('go-to-bank').click({ timeout: 15_000 });
    await page.getByRole('heading', { name: '3D Secure test payment' }).waitFor();
    const bank = new URL(page.url()).origin;
    if (challenge.loseRedirect) {
      await page.route(`${bank}/three_d_secure/**`, async (route) => {
        if (route.request().method() !== 'POST') return route.continue();
        // The processor may be down or drop this very request (a fault of the run): thrown
        // here, it would fail the test from Playwright's route handler, outside this try.
        const answer = await route.fetch({ maxRedirects: 0 }).catch(() => undefined);
        await route.abort('connectionreset');
        returnUrl = answer?.headers().location;
        answerFailed = !returnUrl;
      });
    }
    const button = challenge.answer === 'complete' ? 'Complete' : 'Fail';
    await page
      .getByRole('button', { name: `${button} authentication` })
      .click({ noWaitAfter: challenge.loseRedirect });
    if (challenge.loseRedirect) {
      // The browser's error page for the dropped answer loads; then the shopper asks again.
      for (let i = 0; i < 60 && !answerFailed && (!returnUrl || page.url().startsWith(bank)); i++) {
        await page.waitForTimeout(500);
      }
      if (!returnUrl) throw new Error('the processor never answered the challenge');
      await page.goto(returnUrl);
    } else {
      await page.waitForURL('**/checkout/return**');
    }
    complete('ok', { ...detail, ...(challenge.loseRedirect ? { lostResponse: true } : {}) });
  } catch (error) {
    complete('info', { ...detail, error: `challenge: ${(error as Error).message.split('\n')[0]}` });
    await page.goto(`${ctx.webUrl}/checkout/return`).catch(() => {});
  }
}
