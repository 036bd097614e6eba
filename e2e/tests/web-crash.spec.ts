import {
  checkoutState,
  fillCart,
  PAY_ROUTE,
  recordPayRequests,
  signIn,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

const system = useSharedSystem();

test('the web server SIGKILLed after a payment was submitted: the page recovers with the same key', async ({
  page,
}) => {
  const sent = recordPayRequests(page);
  let webKilled: () => void = () => {};
  const killed = new Promise<void>((resolve) => {
    webKilled = resolve;
  });
  let first = true;
  // The first request is processed; then the server dies before the browser gets the answer.
  await page.route(PAY_ROUTE, async (route) => {
    if (!first) return route.continue();
    first = false;
    await route.fetch();
    await system().supervisor.kill('web');
    webKilled();
    await route.abort('connectionreset');
  });
  await signIn(page, system().webUrl);
  await fillCart(page, { book_pragprog: 1 });
  await page.getByTestId('pay').click();
  await killed;

  // While the server is down the page says it is retrying (or, past its bound, offers a retry).
  await expect(checkoutState(page)).toHaveAttribute(
    'data-state',
    /^(network_retrying|in_flight|outcome_unknown)$/,
  );
  await system().startWeb();

  // Recover: either the automatic retries reach the new server, or the user presses Retry.
  const state = checkoutState(page);
  await expect(state).toHaveAttribute('data-state', /^(processing|succeeded|outcome_unknown)$/, {
    timeout: 60_000,
  });
  if ((await state.getAttribute('data-state')) === 'outcome_unknown')
    await page.getByTestId('retry').click();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  await expectInvariant(system(), [shown]);
});

test('the web server SIGKILLed while the page watches a payment: the page keeps watching', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { bookmark: 1, book_sre: 1 });
  // Stop the worker so the payment stays processing while the web server dies.
  await system().supervisor.stop('worker-1');
  await page.getByTestId('pay').click();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'processing');

  await system().supervisor.kill('web');
  await system().startWorker(0);
  await system().startWeb();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  await expectInvariant(system(), [shown]);
});

test('a reload while the payment is processing resumes watching the same payment', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_ddia: 2 });
  // No worker: the payment stays processing across the reload.
  await system().supervisor.stop('worker-1');
  await page.getByTestId('pay').click();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'processing');
  const paymentId = await checkoutState(page).getAttribute('data-payment-id');

  await page.reload();
  await expect(checkoutState(page)).toHaveAttribute('data-payment-id', paymentId!);
  await expect(checkoutState(page)).toContainText('resumed after reload');
  await system().startWorker(0);

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(shown.paymentId).toBe(paymentId);
  await expectInvariant(system(), [shown]);
});
