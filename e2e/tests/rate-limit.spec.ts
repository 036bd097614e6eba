import { expect, test } from '@playwright/test';
import postgres from 'postgres';
import {
  checkoutState,
  fillCart,
  readShown,
  type ShownCheckout,
  signIn,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { useTestSystem } from '../support/system.ts';

// A web app that accepts only 2 new idempotency keys per tenant per minute.
const system = useTestSystem({ env: { ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '2' } });

test('over the per-tenant new-key limit the page says rate limited, nothing was charged or written', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  const paid: ShownCheckout[] = [];
  let limited: ShownCheckout | undefined;
  // Each purchase is a new intent, so a new key. Processor webhooks count as new keys of the
  // tenant too, and one more key fits every 30 s of the sliding minute, so allow a few
  // purchases before the limit must have been hit.
  for (let quantity = 1; quantity <= 7 && !limited; quantity++) {
    await fillCart(page, { book_sre: quantity });
    await page.getByTestId('pay').click();
    await expect(checkoutState(page)).toHaveAttribute(
      'data-state',
      /^(succeeded|declined|failed|rate_limited)$/,
      { timeout: 90_000 },
    );
    const shown = await readShown(page);
    if (shown.state === 'rate_limited') {
      limited = shown;
    } else {
      paid.push(shown);
      await page.getByTestId('new-purchase').click();
    }
  }
  expect(limited, 'the limit was reached').toBeDefined();
  await expect(checkoutState(page)).toContainText('Nothing was charged');
  await expect(checkoutState(page)).toContainText(/retry in \d+ s/i);
  await expect(page.getByTestId('retry')).toBeVisible();

  // Nothing of the refused attempt exists: no payment, no stored key.
  const sql = postgres(system().databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [counts] = await sql<{ payments: number; keys: number }[]>`
      select (select count(*)::int from payments where idempotency_key = ${limited!.idempotencyKey}) as payments,
             (select count(*)::int from idempotency_keys where key = ${limited!.idempotencyKey}) as keys`;
    expect(counts).toEqual({ payments: 0, keys: 0 });
  } finally {
    await sql.end({ timeout: 5 });
  }
  await expectInvariant(system(), paid);
});
