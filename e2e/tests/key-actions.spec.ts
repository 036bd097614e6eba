import AxeBuilder from '@axe-core/playwright';
import { fillCart, signIn, waitForTerminal } from '../support/checkout-page.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The cockpit's key panel: an operator looks up the key of a finished payment, sees that it
// may be evicted but not released, evicts it with a reason, and the key is gone.
const system = useSharedSystem();

test('an operator looks up a payment’s idempotency key and evicts it with a reason', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1 });
  await page.getByTestId('pay').click();
  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');

  await page.goto(`${system().webUrl}/ops`);
  await signInAsOperator(page, system());
  const panel = page.getByTestId('key-actions');
  await panel.getByLabel('Idempotency-Key').fill(shown.idempotencyKey);
  await panel.getByRole('button', { name: 'Look up' }).click();
  const summary = panel.getByTestId('key-summary');
  await expect(summary).toContainText('completed');
  await expect(summary).not.toContainText(shown.paymentId); // never the stored response body

  const evict = panel.getByRole('button', { name: 'Evict' });
  await expect(evict).toBeDisabled(); // no reason yet
  await panel.getByLabel('Reason (audited)').fill('e2e: customer asked to pay again');
  await expect(panel.getByRole('button', { name: 'Release' })).toBeDisabled();
  await evict.click();
  await expect(panel).toContainText('evict: completed → deleted');
  await expect(panel.getByRole('status')).toContainText('No such key');

  const results = await new AxeBuilder({ page }).include('[data-testid="key-actions"]').analyze();
  const serious = results.violations.filter(
    (v) => v.impact === 'serious' || v.impact === 'critical',
  );
  expect(serious.map((v) => v.id)).toEqual([]);
});
