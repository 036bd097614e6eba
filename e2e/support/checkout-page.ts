import { expect, type Locator, type Page } from '@playwright/test';

/** Terminal states the checkout shows once the payment settled. */
const TERMINAL_STATES = ['succeeded', 'declined', 'failed', 'canceled'] as const;

/** What the user was shown at the end of one checkout, read from the page. */
export interface ShownCheckout {
  tenantId: string;
  idempotencyKey: string;
  paymentId: string;
  state: string;
  replayedNotice: boolean;
}

/** The checkout's one live status region. */
export function checkoutState(page: Page): Locator {
  return page.getByTestId('checkout-state');
}

/** Opens the checkout and signs in as a demo merchant. */
export async function signIn(page: Page, webUrl: string, tenantId = 'tenant_a'): Promise<void> {
  await page.goto(webUrl);
  await page.getByTestId(`merchant-${tenantId}`).click();
  await expect(page.getByTestId('merchant-name')).toBeVisible();
}

/** Sets quantities (product id -> quantity) and picks a test card by number. */
export async function fillCart(
  page: Page,
  quantities: Record<string, number>,
  cardNumber = '4242424242424242',
): Promise<void> {
  for (const [productId, quantity] of Object.entries(quantities)) {
    await page.getByTestId(`quantity-${productId}`).fill(String(quantity));
  }
  await page.getByTestId(`card-${cardNumber}`).check();
  await expect(page.getByTestId('pay')).toBeEnabled();
}

/**
 * Presses Retry (the same key) whenever the page offers it, until the payment is accepted
 * (processing or succeeded): what a presenter does while the database is away. The page
 * never retries a 503 by itself.
 */
export async function retryUntilAccepted(page: Page, timeout: number): Promise<void> {
  const retry = page.getByTestId('retry');
  await expect(async () => {
    if (await retry.isVisible()) await retry.click();
    await expect(checkoutState(page)).toHaveAttribute('data-state', /^(processing|succeeded)$/, {
      timeout: 1_500,
    });
  }).toPass({ timeout });
}

/** Waits until the page shows a terminal state and reads what it showed. */
export async function waitForTerminal(
  page: Page,
  tenantId = 'tenant_a',
  timeout = 90_000,
): Promise<ShownCheckout> {
  const state = checkoutState(page);
  await expect(state).toHaveAttribute(
    'data-state',
    new RegExp(`^(${TERMINAL_STATES.join('|')})$`),
    {
      timeout,
    },
  );
  return readShown(page, tenantId);
}

/** What the status region shows right now. */
export async function readShown(page: Page, tenantId = 'tenant_a'): Promise<ShownCheckout> {
  const state = checkoutState(page);
  return {
    tenantId,
    idempotencyKey: (await state.getAttribute('data-idempotency-key')) ?? '',
    paymentId: (await state.getAttribute('data-payment-id')) ?? '',
    state: (await state.getAttribute('data-state')) ?? '',
    replayedNotice: await page.getByTestId('replayed-notice').isVisible(),
  };
}

/**
 * Records the Idempotency-Key of every `checkout.pay` request the page sends (retries
 * included), to prove that every attempt of one intent carried the same key.
 */
export function recordPayRequests(page: Page): { keys: string[] } {
  const seen = { keys: [] as string[] };
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url().includes('/api/trpc/checkout.pay')) {
      seen.keys.push(request.headers()['idempotency-key'] ?? '');
    }
  });
  return seen;
}

/** The URL pattern of the pay mutation (non-batched, so exactly this path). */
export const PAY_ROUTE = '**/api/trpc/checkout.pay**';
