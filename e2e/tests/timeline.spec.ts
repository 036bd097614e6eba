import AxeBuilder from '@axe-core/playwright';
import { adminClient } from '@once/processor/testing';
import { fillCart, signIn, waitForTerminal } from '../support/checkout-page.ts';
import { showCockpitTable } from '../support/cockpit-table.ts';
import { expectInvariant } from '../support/invariant.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The life of one payment in the cockpit: pay with a processor fault, open the payment's
// timeline from the cockpit, and see the lanes, the fault, the recovery and the verdict.
const system = useSharedSystem();

test.afterEach(async () => {
  await adminClient(
    system().processorUrl,
    system().envFor('processor').PROCESSOR_ADMIN_TOKEN,
  ).clearFaults();
});

test('the timeline draws a payment across browser, web, worker and processor, with the fault, the recovery and the ledger verdict', async ({
  page,
}, testInfo) => {
  // The confirm charges, then answers 5xx: the worker retries and learns it was charged.
  await adminClient(
    system().processorUrl,
    system().envFor('processor').PROCESSOR_ADMIN_TOKEN,
  ).armFault({
    account: 'acct_tenant_a',
    kind: 'fail_after_charge',
    operation: 'payment_intents.confirm',
    count: 1,
  });
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1 });
  await page.getByTestId('pay').click();
  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  await expectInvariant(system(), [shown]);

  await page.goto(`${system().webUrl}/ops`);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('ops-stuck')).toHaveAttribute('data-stuck', '0');
  // Earlier specs on the shared system paid too: past a few rows the payments table folds.
  await showCockpitTable(page, 'ops-payments');
  const row = page
    .getByTestId('ops-payments')
    .getByRole('row')
    .filter({ hasText: shown.paymentId });
  await row.getByRole('link', { name: /timeline/i }).click();
  await expect(page).toHaveURL(new RegExp(`/ops/payments/${shown.paymentId}$`));

  const diagram = page.getByTestId('timeline-diagram');
  for (const lane of ['browser', 'web', 'worker:worker-1', 'processor']) {
    await expect(diagram.locator(`[data-lane="${lane}"]`)).toBeVisible();
  }
  await expect(page.getByTestId('timeline-verdict').locator('[data-verdict]')).toHaveAttribute(
    'data-verdict',
    'agrees',
  );
  // The text alternative tells the same story in order: the attempt, the failed confirm
  // (with its downstream key), the retry, and the recorded success.
  const table = page.getByTestId('timeline-table');
  await expect(table).toContainText(`Idempotency-Key ${shown.idempotencyKey}`);
  await expect(table).toContainText(/confirm with key once_ck_\w+:confirm on pi_\w+: failed/);
  await expect(table).toContainText(/Claimed job \w+, attempt 2/);
  // The retry records the success itself, or finds it already settled by the webhook that
  // overtook it: either way the job's end is on the timeline.
  await expect(table).toContainText(
    /Outcome succeeded recorded; job done|done at attempt 2 without calling the processor: the payment was already succeeded/,
  );

  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter(
    (v) => v.impact === 'serious' || v.impact === 'critical',
  );
  expect(serious.map((v) => v.id)).toEqual([]);

  // Phone width: the picture scrolls sideways inside its region; the page does not.
  await page.setViewportSize({ width: 375, height: 812 });
  const pageWidth = await page.evaluate('document.documentElement.scrollWidth');
  expect(pageWidth).toBeLessThanOrEqual(375);
  await page.screenshot({ path: testInfo.outputPath('timeline.png'), fullPage: true });
});
