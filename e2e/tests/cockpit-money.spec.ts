import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expectInvariant } from '../support/invariant.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { ledgerOf } from '../support/processor-ledger.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The cockpit's money buttons move money once however they are pressed: a double-clicked
// Capture captures once, a double-clicked Refund refunds once, a refund over what is left is
// refused with its reason; each key's story lists the replay its double click earned. The
// processor's ledger is the judge, not the page.
const system = useSharedSystem();

/** A payment made through the merchant's REST API, once the worker settled its charge. */
async function payment(page: Page, captureMethod: 'manual' | 'automatic'): Promise<string> {
  const api = `${system().webUrl}/api/v1/payments`;
  const headers = { authorization: 'Bearer once_test_tenant_a' };
  const created = await page.request.post(api, {
    headers: { ...headers, 'idempotency-key': randomUUID() },
    data: { lines: [{ productId: 'book_sre', quantity: 1 }], captureMethod },
  });
  expect(created.status()).toBe(201);
  const { paymentId } = (await created.json()) as { paymentId: string };
  const settled = captureMethod === 'manual' ? 'requires_capture' : 'succeeded';
  await expect
    .poll(
      async () =>
        (
          (await (await page.request.get(`${api}/${paymentId}`, { headers })).json()) as {
            status: string;
          }
        ).status,
    )
    .toBe(settled);
  return paymentId;
}

async function openPayment(page: Page, paymentId: string) {
  await page.goto(`${system().webUrl}/ops/payments/${paymentId}`);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('money-actions')).toBeVisible();
}

test('a double-clicked Capture captures once; its key answered a replay', async ({ page }) => {
  const paymentId = await payment(page, 'manual');
  await page.setViewportSize({ width: 390, height: 844 }); // a phone: the operator on call
  await openPayment(page, paymentId);
  await page.getByRole('button', { name: 'Capture', exact: true }).dblclick();
  await expect(page.getByTestId('capture-answer')).toHaveText(/^Done: captured \$39\.99/);
  expect(await ledgerOf(system(), paymentId)).toEqual(['charge 3999']);
  const story = page.getByTestId('key-stories').locator('tr', { hasText: 'capture' });
  await expect(story.locator('li').first()).toContainText('executed');
  await expect(story).toContainText('replayed');
  await expectInvariant(system(), []);
});

test('two partial refunds, one double-clicked, refund exactly their amounts; one over the rest is refused', async ({
  page,
}) => {
  const paymentId = await payment(page, 'automatic');
  await openPayment(page, paymentId);
  const money = page.getByTestId('money-actions');
  const amount = money.getByLabel(/^Amount \(empty: the rest/);
  const refund = money.getByRole('button', { name: 'Refund', exact: true });
  const answer = page.getByTestId('refund-answer');

  await amount.fill('5.00');
  await refund.dblclick();
  await expect(answer).toHaveText(/^Done: refund of \$5\.00 succeeded/);
  await amount.fill('3.00');
  await refund.click();
  await expect(answer).toHaveText(/^Done: refund of \$3\.00 succeeded/);
  await amount.fill('100.00');
  await refund.click();
  await expect(answer).toHaveText(
    'Refused: the amount is more than is left to refund. Nothing moved.',
  );

  expect(await ledgerOf(system(), paymentId)).toEqual(['charge 3999', 'refund 500', 'refund 300']);
  await expect(money.getByTestId('refunds').locator('tbody tr')).toHaveCount(2);
  await expect(money.getByTestId('money-refunded')).toHaveText('$8.00');
  const stories = page.getByTestId('key-stories').locator('tr', { hasText: 'refund' });
  await expect(stories).toHaveCount(3);
  await expect(stories.first()).toContainText('replayed');
  await expect(stories.last()).toContainText('refund_amount_too_large');
  const axe = await new AxeBuilder({ page })
    .include('[data-testid="money-actions"]')
    .include('[data-testid="key-stories"]')
    .analyze();
  const serious = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious.map((v) => v.id)).toEqual([]);
  await expectInvariant(system(), []);
});
