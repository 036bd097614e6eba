import { adminClient } from '@once/processor/testing';
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

/**
 * How often the fault with this id had its effect (the processor's own count): a request that
 * merely took it, a replay or a 409, does not count.
 */
async function faultTaken(faultId: unknown): Promise<number> {
  const response = await fetch(`${system().processorUrl}/admin/faults/uses?id=${String(faultId)}`, {
    headers: { 'x-admin-token': system().envFor('processor').PROCESSOR_ADMIN_TOKEN! },
  });
  const body = (await response.json()) as { data: { applied: number }[] };
  expect(body.data, `fault ${String(faultId)} on record`).toHaveLength(1);
  return body.data[0]!.applied;
}

test.afterEach(async () => {
  await adminClient(
    system().processorUrl,
    system().envFor('processor').PROCESSOR_ADMIN_TOKEN,
  ).clearFaults();
});

for (const kind of ['charge_then_drop', 'fail_after_charge'] as const) {
  test(`the processor charges, then ${kind === 'charge_then_drop' ? 'drops the connection' : 'answers 5xx'}: still one charge`, async ({
    page,
  }) => {
    // The worker's first call charges the card but never learns it; its retry carries the
    // same downstream key, so the processor replays instead of charging again.
    const fault = await adminClient(
      system().processorUrl,
      system().envFor('processor').PROCESSOR_ADMIN_TOKEN,
    ).armFault({
      account: 'acct_tenant_a',
      kind,
      operation: 'payment_intents.confirm', // the call that moves the money
      count: 1,
    });
    await signIn(page, system().webUrl);
    await fillCart(page, { book_sre: 1 });
    await page.getByTestId('pay').click();

    const shown = await waitForTerminal(page);
    expect(shown.state).toBe('succeeded');
    // The fault bit this checkout's charge: without it this is the golden path.
    expect(await faultTaken(fault.id)).toBe(1);
    await expectInvariant(system(), [shown]);
  });
}

test('a key reused for a different cart is refused (422) and the user can start a new payment', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { bookmark: 1 });
  await page.getByTestId('pay').click();
  const first = await waitForTerminal(page);
  await page.getByTestId('new-purchase').click();

  // A different cart sent under the first checkout's key: what a buggy client would do.
  const sent = recordPayRequests(page);
  let rewritten = false;
  await page.route(PAY_ROUTE, async (route) => {
    if (rewritten) return route.continue();
    rewritten = true;
    await route.continue({
      headers: { ...route.request().headers(), 'idempotency-key': first.idempotencyKey },
    });
  });
  await fillCart(page, { bookmark: 2 });
  await page.getByTestId('pay').click();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'key_reused');
  await expect(checkoutState(page)).toContainText(/different cart/i);

  await page.getByTestId('new-payment').click();
  await page.getByTestId('pay').click();
  const second = await waitForTerminal(page);
  expect(second.state).toBe('succeeded');
  expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
  expect(sent.keys.length).toBe(2);
  await expectInvariant(system(), [first, second]);
});
