import type { Page } from '@playwright/test';
import {
  checkoutState,
  fillCart,
  readShown,
  recordPayRequests,
  signIn,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';
import { loseRedirectAfterChallenge, THREE_D_SECURE_CARD } from '../support/three-d-secure.ts';

// The 3-D Secure round trip in a real browser: the checkout, the processor's hosted
// challenge on its own origin, and back to the web app's return page. On the shared system:
// it sends the shopper back to the web's own URL, and each test reads its own payment only.
const system = useSharedSystem();

/** Pays with the 3-D Secure card and follows the page to the bank's challenge. */
async function payAndOpenChallenge(page: Page) {
  const sent = recordPayRequests(page);
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1 }, THREE_D_SECURE_CARD);
  await page.getByTestId('pay').click();
  const state = checkoutState(page);
  await expect(state).toHaveAttribute('data-state', 'requires_action', { timeout: 60_000 });
  await expect(state).toContainText('Waiting for your bank');
  const before = await readShown(page);
  await page.getByTestId('go-to-bank').click();
  await expect(page.getByRole('heading', { name: '3D Secure test payment' })).toBeVisible();
  expect(new URL(page.url()).origin).toBe(system().processorUrl);
  return { sent, before };
}

/** On the return page, waits for the processor's outcome and reads what the page shows. */
async function outcomeOnReturn(page: Page, expected: string) {
  expect(new URL(page.url()).pathname).toBe('/checkout/return');
  await expect(checkoutState(page)).toHaveAttribute('data-state', expected, { timeout: 60_000 });
  return readShown(page);
}

test('completing the challenge comes back to the same intent and key, charged once', async ({
  page,
}) => {
  const { sent, before } = await payAndOpenChallenge(page);
  await page.getByRole('button', { name: 'Complete authentication' }).click();

  const shown = await outcomeOnReturn(page, 'succeeded');
  expect(shown.idempotencyKey).toBe(before.idempotencyKey);
  expect(shown.paymentId).toBe(before.paymentId);
  expect(sent.keys).toEqual([before.idempotencyKey]);
  await expectInvariant(system(), [shown]);
});

test('failing the challenge shows the authentication error; nothing is charged and nothing is paid again by itself', async ({
  page,
}) => {
  const { sent, before } = await payAndOpenChallenge(page);
  await page.getByRole('button', { name: 'Fail authentication' }).click();

  const shown = await outcomeOnReturn(page, 'failed');
  expect(shown.paymentId).toBe(before.paymentId);
  await expect(checkoutState(page)).toContainText('Your bank did not confirm this payment');
  await expect(checkoutState(page)).toContainText('payment_intent_authentication_failure');
  // Paying again is the shopper's choice, with a new payment: nothing was sent meanwhile.
  await expect(page.getByTestId('new-purchase')).toBeVisible();
  expect(sent.keys).toEqual([before.idempotencyKey]);
  await expectInvariant(system(), [shown]);
});

test('the answer lost after the challenge: back on the return page (a reload), still one charge, same key', async ({
  page,
}) => {
  const { sent, before } = await payAndOpenChallenge(page);
  // The processor takes the answer and charges, but its redirect back never reaches the
  // browser. The shopper retries: the browser asks for the return page it never got.
  await page.goto(await loseRedirectAfterChallenge(page, system().processorUrl));
  const shown = await outcomeOnReturn(page, 'succeeded');
  expect(shown.idempotencyKey).toBe(before.idempotencyKey);
  expect(shown.paymentId).toBe(before.paymentId);
  expect(sent.keys).toEqual([before.idempotencyKey]);
  await expectInvariant(system(), [shown]);
});
