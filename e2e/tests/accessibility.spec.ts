import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { fillCart, signIn, waitForTerminal } from '../support/checkout-page.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The pages as a visitor meets them: no console errors, no failed requests, no layout
// shift, and usable with a keyboard and a screen reader (axe-core: no serious or critical
// violation), at desktop and phone width.
const system = useSharedSystem();

const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 860 };

/** Collects everything a visitor's console or network panel would show as a problem. */
function watchForProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) =>
    problems.push(`request failed: ${request.url()} (${request.failure()?.errorText})`),
  );
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  return problems;
}

/** Serious and critical axe-core violations, one line each (rule, impact, first target). */
async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** The browser globals the page functions below use (this project compiles without the DOM lib). */
interface BrowserGlobals {
  PerformanceObserver: new (
    callback: (list: { getEntries(): { value: number; hadRecentInput: boolean }[] }) => void,
  ) => { observe(options: { type: string; buffered: boolean }): void };
  document: { documentElement: { scrollWidth: number; clientWidth: number } };
}

/** Cumulative layout shift so far (shifts right after user input excluded, as the metric does). */
async function layoutShift(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const browser = globalThis as unknown as BrowserGlobals;
        let total = 0;
        new browser.PerformanceObserver((list) => {
          for (const entry of list.getEntries()) {
            if (!entry.hadRecentInput) total += entry.value;
          }
        }).observe({ type: 'layout-shift', buffered: true });
        setTimeout(() => resolve(total), 300);
      }),
  );
}

test('a normal load of checkout and cockpit logs no console error and no failed request', async ({
  page,
}) => {
  const problems = watchForProblems(page);
  // First visit, signed out: no 401 for the session, no 404 for an icon.
  await page.goto(system().webUrl);
  await expect(page.getByTestId('merchant-tenant_a')).toBeVisible();
  await page.getByTestId('merchant-tenant_a').click();
  // Navigate only once the page has what it asked for: a navigation aborts requests in flight.
  await expect(page.getByTestId('quantity-book_sre')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('checkout-state')).toHaveAttribute('data-state', 'idle');
  await expect(page.getByTestId('quantity-book_sre')).toBeVisible();
  await page.goto(`${system().webUrl}/ops`);
  // A shopper's session does not open the cockpit: the sign-in is part of a normal load.
  await expect(page.getByTestId('operator-required')).toBeVisible();
  expect(await seriousViolations(page), 'operator sign-in').toEqual([]);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('ops-payments')).toBeVisible();
  await page.waitForLoadState('networkidle');
  expect(problems).toEqual([]);
});

test('the checkout does not shift while it loads, at desktop and phone width', async ({ page }) => {
  await signIn(page, system().webUrl);
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    await page.reload();
    await expect(page.getByTestId('checkout-state')).toHaveAttribute('data-state', 'idle');
    await page.waitForLoadState('networkidle');
    expect(await layoutShift(page), `layout shift at ${size.width} px`).toBeLessThan(0.05);
  }
});

test('checkout and cockpit have no serious or critical accessibility violation (axe-core)', async ({
  page,
}, testInfo) => {
  await page.setViewportSize(DESKTOP);
  await page.goto(system().webUrl);
  await expect(page.getByTestId('merchant-tenant_a')).toBeVisible();
  expect(await seriousViolations(page), 'merchant picker').toEqual([]);

  await page.getByTestId('merchant-tenant_a').click();
  await expect(page.getByTestId('merchant-name')).toBeVisible();
  await fillCart(page, { book_sre: 1, bookmark: 2 });
  expect(await seriousViolations(page), 'checkout, ready').toEqual([]);
  await page.screenshot({
    path: testInfo.outputPath('checkout-desktop-ready.png'),
    fullPage: true,
  });

  // Keyboard only: the Pay button is reachable and works from the keyboard.
  await page.getByTestId('pay').focus();
  await page.keyboard.press('Enter');
  await waitForTerminal(page);
  expect(await seriousViolations(page), 'checkout, succeeded').toEqual([]);
  await page.screenshot({ path: testInfo.outputPath('checkout-desktop.png'), fullPage: true });

  await page.setViewportSize(PHONE);
  expect(await seriousViolations(page), 'checkout at phone width').toEqual([]);
  const overflow = await page.evaluate(() => {
    const root = (globalThis as unknown as BrowserGlobals).document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });
  expect(overflow, 'no sideways scrolling at 375 px').toBeLessThanOrEqual(0);
  await page.screenshot({ path: testInfo.outputPath('checkout-phone.png'), fullPage: true });

  await page.setViewportSize(DESKTOP);
  await page.goto(`${system().webUrl}/ops`);
  // A shopper's session does not open the cockpit: the sign-in is part of a normal load.
  await expect(page.getByTestId('operator-required')).toBeVisible();
  expect(await seriousViolations(page), 'operator sign-in').toEqual([]);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('ops-payments')).toBeVisible();
  await page.waitForLoadState('networkidle');
  expect(await seriousViolations(page), 'cockpit').toEqual([]);
  await page.screenshot({ path: testInfo.outputPath('cockpit-desktop.png'), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: testInfo.outputPath('cockpit-phone.png'), fullPage: true });
});

test('the locked state (outcome unknown) is readable and accessible at phone width', async ({
  page,
}, testInfo) => {
  await page.setViewportSize(PHONE);
  // Never unrouted (interception turned off under a request can hang it in Chromium,
  // microsoft/playwright#41802): the route lets the retry through once `answering`.
  let answering = false;
  await page.route('**/api/trpc/checkout.pay**', (route) =>
    answering ? route.continue() : route.abort('connectionreset'),
  );
  await signIn(page, system().webUrl);
  await fillCart(page, { book_ddia: 1 });
  await page.getByTestId('pay').click();
  await page.reload();
  await expect(page.getByTestId('checkout-state')).toHaveAttribute('data-state', 'outcome_unknown');
  await expect(page.getByTestId('intent-locked')).toBeVisible();
  expect(await seriousViolations(page), 'checkout, outcome unknown').toEqual([]);
  await page.screenshot({ path: testInfo.outputPath('checkout-phone-locked.png'), fullPage: true });
  await page.setViewportSize(DESKTOP);
  await page.screenshot({
    path: testInfo.outputPath('checkout-desktop-locked.png'),
    fullPage: true,
  });
  // Settle it so the system converges: the same key, now answered.
  answering = true;
  await page.getByTestId('retry').click();
  await waitForTerminal(page);
});
