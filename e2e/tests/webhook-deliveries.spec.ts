import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import postgres from 'postgres';
import { showCockpitTable } from '../support/cockpit-table.ts';
import { expectInvariant } from '../support/invariant.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The cockpit's webhook deliveries of a payment: the processor's event shown delivered, and a
// double-clicked Resend sends it once more (one more 2xx at the processor, not two), with the
// same event id, which the app records as a duplicate and applies nothing twice. The cockpit
// lists the merchant's newest events too.
const system = useSharedSystem();

/** The processor's outbox row of one event: how many 2xx its endpoint answered. */
async function deliveriesOf(eventId: string): Promise<number> {
  const sql = postgres(system().processorDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ deliveries: number }[]>`
      select deliveries from webhook_events where id = ${eventId}`;
    return row!.deliveries;
  } finally {
    await sql.end();
  }
}

async function expectAccessible(page: Page) {
  const axe = await new AxeBuilder({ page })
    .include('[data-testid="webhook-deliveries"]')
    .analyze();
  const serious = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious.map((v) => v.id)).toEqual([]);
}

test('a payment’s succeeded event shows delivered; a double-clicked Resend resends it once', async ({
  page,
}) => {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  const api = `${system().webUrl}/api/v1/payments`;
  const headers = { authorization: 'Bearer once_test_tenant_a' };
  const created = await page.request.post(api, {
    headers: { ...headers, 'idempotency-key': randomUUID() },
    data: { lines: [{ productId: 'book_sre', quantity: 1 }] },
  });
  expect(created.status()).toBe(201);
  const { paymentId } = (await created.json()) as { paymentId: string };

  await page.setViewportSize({ width: 390, height: 844 }); // a phone: the operator on call
  await page.goto(`${system().webUrl}/ops/payments/${paymentId}`);
  await signInAsOperator(page, system());
  const panel = page.getByTestId('webhook-deliveries');
  const row = panel.locator('tr', { hasText: 'payment_intent.succeeded' });
  await expect(row.getByTestId('delivery-state')).toHaveAttribute('data-state', 'delivered', {
    timeout: 15_000,
  });
  const eventId = (await row.locator('code').textContent())!;
  expect(await deliveriesOf(eventId)).toBe(1);

  await row.getByRole('button', { name: /^Resend / }).dblclick();
  await expect(row.getByTestId(`resend-answer-${eventId}`)).toHaveText(
    'Done: the endpoint answered HTTP 200.',
  );
  expect(await deliveriesOf(eventId)).toBe(2);
  await expect(page.getByTestId('timeline-status')).toHaveText('succeeded');

  await expectAccessible(page);

  // The cockpit lists the merchant's newest events, each linked to its payment.
  await page.goto(`${system().webUrl}/ops`);
  // On the shared system the list holds the earlier specs' events too: past a few rows the
  // cockpit folds it, so unfold it before looking for this payment's row.
  await showCockpitTable(page, 'webhook-deliveries');
  const listed = page.getByTestId('webhook-deliveries').locator('tr', { hasText: eventId });
  await expect(listed.getByTestId('delivery-state')).toHaveAttribute('data-state', 'delivered');
  await expect(listed.getByRole('link', { name: paymentId })).toBeVisible();
  await expectAccessible(page);
  expect(problems).toEqual([]);
  await expectInvariant(system(), []);
});
