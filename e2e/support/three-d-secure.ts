import { expect, type Page } from '@playwright/test';

/** Stripe's test card that always asks for 3-D Secure (pm_card_threeDSecure2Required). */
export const THREE_D_SECURE_CARD = '4000000000003220';

/**
 * On the processor's challenge page: completes the authentication, but the redirect back to
 * the web app is lost. The processor takes the answer and charges; its answer (the redirect)
 * never reaches the browser, whose own error page loads instead. Resolves with the return URL
 * the redirect carried, for the shopper to ask for again.
 */
export async function loseRedirectAfterChallenge(
  page: Page,
  processorUrl: string,
): Promise<string> {
  let returnUrl: string | undefined;
  // A redirect's target is not routable: the answer itself is dropped.
  await page.route(`${processorUrl}/three_d_secure/**`, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const answer = await route.fetch({ maxRedirects: 0 });
    await route.abort('connectionreset');
    returnUrl = answer.headers().location;
  });
  await page.getByRole('button', { name: 'Complete authentication' }).click({ noWaitAfter: true });
  await expect.poll(() => returnUrl, { timeout: 30_000 }).toBeDefined();
  // The browser's own error page for the lost answer has loaded: nothing else navigates now.
  // Polled, not waitForURL: that waits on the failing navigation itself and can reject with
  // its ERR_CONNECTION_RESET.
  await expect
    .poll(() => (page.url().startsWith(processorUrl) ? 'on the bank page' : 'left it'), {
      timeout: 30_000,
    })
    .toBe('left it');
  return returnUrl ?? '';
}
