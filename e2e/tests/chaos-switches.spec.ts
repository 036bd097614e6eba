import { type BrowserContext, expect, type Page, test } from '@playwright/test';
import {
  checkoutState,
  fillCart,
  recordPayRequests,
  signIn,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { useTestSystem } from '../support/system.ts';

/**
 * The cockpit's chaos switches, pressed with the mouse the way a presenter does, against a
 * system whose launcher restarts what dies (as `npm run demo`).
 */
const system = useTestSystem({
  chaos: true,
  restart: {
    initialDelayMs: 200,
    maxDelayMs: 2_000,
    maxRestarts: 5,
    windowMs: 60_000,
    resetAfterMs: 30_000,
  },
  env: { WORKER_LEASE_MS: '2000', WORKER_POLL_INTERVAL_MS: '300' },
});

async function openCockpit(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${system().webUrl}/ops`);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('chaos-switches')).toBeVisible();
  return page;
}

async function pressSwitch(cockpit: Page, label: string, says: RegExp): Promise<void> {
  await cockpit.getByRole('button', { name: label }).click();
  await expect(cockpit.getByTestId('chaos-outcome')).toHaveText(says);
}

test("drop this browser's next payment answer: the page retries with its key and says 'not charged twice'", async ({
  context,
}) => {
  const cockpit = await openCockpit(context);
  await pressSwitch(cockpit, "Drop this browser's next payment answer", /committed by the server/);

  const page = await context.newPage();
  const sent = recordPayRequests(page);
  // Same browser as the cockpit: already signed in (an operator may pay too).
  await page.goto(system().webUrl);
  await expect(page.getByTestId('merchant-name')).toBeVisible();
  await fillCart(page, { book_sre: 1 });
  await page.getByTestId('pay').click();
  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  // The lost answer was retried with the same key and replayed.
  expect(sent.keys.length).toBeGreaterThanOrEqual(2);
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  await expectInvariant(system(), [shown]);
});

test('kill the web server from the cockpit while a checkout page watches a payment: both recover', async ({
  browser,
}) => {
  const operator = await browser.newContext();
  const shopper = await browser.newContext();
  try {
    const cockpit = await openCockpit(operator);
    const page = await shopper.newPage();
    await signIn(page, system().webUrl);
    await fillCart(page, { book_ddia: 1 });

    // The only worker stopped past its lease: the payment stays processing for a while.
    await pressSwitch(cockpit, 'Pause a worker past its lease', /paused with SIGSTOP/);
    await expect(cockpit.locator('[data-part="worker-1"]')).toHaveAttribute('data-state', 'paused');
    await page.getByTestId('pay').click();
    await expect(checkoutState(page)).toHaveAttribute('data-state', /^(processing|succeeded)$/);

    await pressSwitch(cockpit, 'Kill the web server', /killed with SIGKILL/);
    // The cockpit shows the web server back, restarted once.
    await expect(cockpit.locator('[data-part="web"]')).toContainText('restarted 1 time', {
      timeout: 90_000,
    });
    await expect(cockpit.locator('[data-part="web"]')).toHaveAttribute('data-state', 'up');

    const shown = await waitForTerminal(page);
    expect(shown.state).toBe('succeeded');
    await expectInvariant(system(), [shown]);
  } finally {
    await operator.close();
    await shopper.close();
  }
});
