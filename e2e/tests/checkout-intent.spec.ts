import {
  checkoutState,
  fillCart,
  PAY_ROUTE,
  readShown,
  recordPayRequests,
  signIn,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// One checkout intent = one Idempotency-Key, kept in storage every tab of the origin shares.
// While the intent's outcome is unknown, nothing that would make a new intent (cart, card,
// merchant) can be changed, in this tab or another.
const system = useSharedSystem();

test('a lost response leaves cart and card locked until a retry with the same key answers: one charge', async ({
  page,
}) => {
  const sent = recordPayRequests(page);
  // Every attempt reaches the server and is processed; the browser never sees an answer until
  // `answering`. The route is never removed: turning interception off while the page sends
  // requests can leave one hanging unsent in Chromium (microsoft/playwright#41802).
  let answering = false;
  await page.route(PAY_ROUTE, async (route) => {
    if (answering) return route.continue();
    await route.fetch();
    await route.abort('connectionreset');
  });
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1, bookmark: 1 });
  await page.getByTestId('pay').click();

  // The automatic retries give up: the outcome is unknown, the payment may exist.
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'outcome_unknown', {
    timeout: 60_000,
  });
  // Nothing that would make a new intent can be changed.
  await expect(page.getByTestId('quantity-book_sre')).toBeDisabled();
  await expect(page.getByTestId('quantity-bookmark')).toBeDisabled();
  await expect(page.getByTestId('card-4000000000000002')).toBeDisabled();
  await expect(page.getByRole('button', { name: 'Switch merchant' })).toBeDisabled();
  // A reload does not unlock it either.
  await page.reload();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'outcome_unknown');
  await expect(page.getByTestId('quantity-book_sre')).toBeDisabled();
  await expect(page.getByTestId('quantity-book_sre')).toHaveValue('1');

  answering = true;
  await page.getByTestId('retry').click();
  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  // A definite answer frees the form.
  await page.getByTestId('new-purchase').click();
  await expect(page.getByTestId('quantity-book_sre')).toBeEnabled();
  await expectInvariant(system(), [shown]);
});

test('one cart in two tabs is one intent: the second tab shows the lock and pays with the same key', async ({
  context,
}) => {
  const first = await context.newPage();
  const sentFirst = recordPayRequests(first);
  // The first tab's request is processed by the server; its answer never comes back.
  let processed: () => void = () => {};
  const firstProcessed = new Promise<void>((resolve) => {
    processed = resolve;
  });
  let answering = false; // never unrouted, see the first test
  await first.route(PAY_ROUTE, async (route) => {
    if (answering) return route.continue();
    await route.fetch();
    processed();
    await route.abort('connectionreset');
  });
  await signIn(first, system().webUrl);
  await fillCart(first, { book_ddia: 1, bookmark: 2 });
  await first.getByTestId('pay').click();
  await firstProcessed;
  const key = await checkoutState(first).getAttribute('data-idempotency-key');
  expect(key).toBeTruthy();

  // A second tab of the same origin, same merchant session.
  const second = await context.newPage();
  const sentSecond = recordPayRequests(second);
  await second.goto(system().webUrl);
  await expect(second.getByTestId('merchant-name')).toBeVisible();
  await expect(second.getByTestId('quantity-book_ddia')).toHaveValue('1');
  await expect(second.getByTestId('quantity-book_ddia')).toBeDisabled();
  await expect(checkoutState(second)).toHaveAttribute('data-idempotency-key', key!);
  await expect(second.getByTestId('pay')).toBeDisabled();
  // The only way on is an answer for the same key.
  await second.getByTestId('retry').click();

  const shown = await waitForTerminal(second);
  expect(shown.state).toBe('succeeded');
  expect(shown.idempotencyKey).toBe(key);
  expect(new Set([...sentFirst.keys, ...sentSecond.keys])).toEqual(new Set([key]));
  // The first tab learns the payment from the shared intent and shows the same one.
  answering = true;
  await expect(checkoutState(first)).toHaveAttribute('data-payment-id', shown.paymentId, {
    timeout: 60_000,
  });
  expect((await waitForTerminal(first)).state).toBe('succeeded');
  await expectInvariant(system(), [shown]);
});

test('a tab opened while another tab pays shows that intent locked, not a fresh cart', async ({
  context,
}) => {
  const first = await context.newPage();
  await signIn(first, system().webUrl);
  const second = await context.newPage();
  await second.goto(system().webUrl);
  await expect(second.getByTestId('merchant-name')).toBeVisible();

  // Both tabs build the same cart; the first pays.
  await fillCart(first, { book_pragprog: 1 });
  await fillCart(second, { book_pragprog: 1 });
  await first.getByTestId('pay').click();
  const shown = await waitForTerminal(first);
  // The second tab saw the intent through the shared storage and watched the same payment.
  await expect(checkoutState(second)).toHaveAttribute('data-payment-id', shown.paymentId);
  // Each tab polls on its own: the second one reaches the terminal state on its next poll.
  await expect.poll(async () => (await readShown(second)).state).toBe('succeeded');
  await expectInvariant(system(), [shown]);
});
