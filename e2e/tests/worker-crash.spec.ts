import { adminClient } from '@once/processor/testing';
import { expect, type Page, test } from '@playwright/test';
import postgres from 'postgres';
import {
  checkoutState,
  fillCart,
  type ShownCheckout,
  signIn,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { expectInvariant } from '../support/invariant.ts';
import { useTestSystem } from '../support/system.ts';

// A short lease, so the restarted worker takes over the dead one's jobs soon.
const system = useTestSystem({ env: { WORKER_LEASE_MS: '2000' } });

test('a worker SIGKILLed mid-charge and restarted: every checkout converges, charged once', async ({
  browser,
}) => {
  // The processor charges, then holds the answer: the worker dies with the charge made
  // and the outcome unrecorded, the worst moment for it.
  const fault = await adminClient(
    system().processorUrl,
    system().envFor('processor').PROCESSOR_ADMIN_TOKEN,
  ).armFault({
    account: 'acct_tenant_a',
    kind: 'delay',
    when: 'after_charge',
    delay_ms: 6_000,
    operation: 'payment_intents.confirm', // the call that moves the money
    count: 3,
  });

  const carts: { cart: Record<string, number>; card: string }[] = [
    { cart: { book_sre: 1 }, card: '4242424242424242' },
    { cart: { bookmark: 2 }, card: '4242424242424242' },
    { cart: { book_ddia: 1 }, card: '4000000000000002' },
  ];
  // One browser context per customer: own cookies, own sessionStorage, own intent.
  const pages: Page[] = [];
  for (const { cart, card } of carts) {
    const page = await (await browser.newContext()).newPage();
    pages.push(page);
    // Headless Chromium may not hydrate a page that sits in a background window.
    await page.bringToFront();
    await signIn(page, system().webUrl);
    await fillCart(page, cart, card);
  }
  // Three checkouts in quick succession, so the worker has several in flight.
  for (const page of pages) {
    await page.bringToFront();
    await page.getByTestId('pay').click();
  }
  for (const page of pages) {
    // Accepted by the server (whatever the worker has done with it so far).
    await expect(checkoutState(page)).toHaveAttribute(
      'data-state',
      /^(processing|succeeded|declined)$/,
    );
  }

  // Kill the worker while it holds a job (the processor is still sitting on the answer).
  const sql = postgres(system().databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await expect
      .poll(
        async () =>
          (await sql`select count(*)::int as n from outbox_jobs where status = 'running'`)[0]!.n,
        {
          timeout: 30_000,
        },
      )
      .toBeGreaterThan(0);
  } finally {
    await sql.end({ timeout: 5 });
  }
  await system().supervisor.kill('worker-1');
  await system().startWorker(0);

  const shown: ShownCheckout[] = [];
  for (const page of pages) shown.push(await waitForTerminal(page));
  expect(shown.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'declined']);
  // The processor held at least one answer when the worker died (its own count of the delay's
  // effects, not of requests that took it): otherwise the kill landed on a worker with nothing
  // ambiguous in hand.
  const uses = await fetch(`${system().processorUrl}/admin/faults/uses?id=${String(fault.id)}`, {
    headers: { 'x-admin-token': system().envFor('processor').PROCESSOR_ADMIN_TOKEN! },
  });
  const [delay] = ((await uses.json()) as { data: { applied: number }[] }).data;
  expect(delay?.applied ?? 0).toBeGreaterThan(0);
  await expectInvariant(system(), shown);
  await Promise.all(pages.map((page) => page.context().close()));
});
