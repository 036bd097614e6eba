import postgres from 'postgres';
import {
  checkoutState,
  fillCart,
  PAY_ROUTE,
  readShown,
  recordPayRequests,
  signIn,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { showCockpitTable } from '../support/cockpit-table.ts';
import { expectInvariant } from '../support/invariant.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { expect, test, useSharedSystem } from '../support/system.ts';

// The browser-side chaos of a single checkout, on the shared system: each test has its own
// browser context (own cookies, own sessionStorage), so its own intents and keys.
const system = useSharedSystem();

test('golden path: a 4242 card is charged once and the page says so', async ({ page }) => {
  const sent = recordPayRequests(page);
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1, bookmark: 2 }, '4242424242424242');
  await page.getByTestId('pay').click();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(shown.replayedNotice).toBe(false);
  expect(sent.keys).toEqual([shown.idempotencyKey]);
  await expectInvariant(system(), [shown]);
});

test('a declined card is shown as declined, with the reason, and nothing is charged', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_ddia: 1 }, '4000000000000002');
  await page.getByTestId('pay').click();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('declined');
  await expect(checkoutState(page)).toContainText(/declined/i);
  await expectInvariant(system(), [shown]);
});

test('insufficient funds is a decline with its own reason', async ({ page }) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_pragprog: 1 }, '4000000000009995');
  await page.getByTestId('pay').click();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('declined');
  await expect(checkoutState(page)).toContainText(/insufficient/i);
  await expectInvariant(system(), [shown]);
});

test('a double click that gets past the disabled button sends one key: one payment', async ({
  page,
}) => {
  const sent = recordPayRequests(page);
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 2 });
  // Two clicks in one task, before React can re-render the button as disabled; the second
  // also forces the button enabled, so the UI's disabled state cannot be what protects us.
  await page.getByTestId('pay').evaluate((element) => {
    const button = element as unknown as { click(): void; disabled: boolean };
    button.click();
    button.disabled = false;
    button.click();
  });

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(sent.keys.length).toBeGreaterThanOrEqual(2);
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  // The second request is answered from the stored response (at once, or after waiting
  // out a 409's Retry-After, which the server sets to the lease's remaining life), and the
  // page says so.
  await expect(page.getByTestId('replayed-notice')).toBeVisible({ timeout: 60_000 });
  await expectInvariant(system(), [shown]);
});

test('a lost response is retried with the same key and replayed, not charged again', async ({
  page,
}) => {
  const sent = recordPayRequests(page);
  let dropped = 0;
  // The server processes the first request; the browser never sees the answer.
  await page.route(PAY_ROUTE, async (route) => {
    if (dropped > 0) return route.continue();
    dropped++;
    await route.fetch();
    await route.abort('connectionreset');
  });
  await signIn(page, system().webUrl);
  await fillCart(page, { bookmark: 3 });
  await page.getByTestId('pay').click();

  const shown = await waitForTerminal(page);
  expect(dropped).toBe(1);
  expect(shown.state).toBe('succeeded');
  expect(sent.keys.length).toBeGreaterThanOrEqual(2);
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  await expectInvariant(system(), [shown]);
});

test('a reload mid-checkout keeps the intent: paying again reuses the key', async ({ page }) => {
  const sent = recordPayRequests(page);
  let processed: () => void = () => {};
  const firstProcessed = new Promise<void>((resolve) => {
    processed = resolve;
  });
  // The first request reaches the server, then the page is reloaded before the answer. The
  // route stays for the whole test and lets later requests through: removing it while the
  // reloaded page sends its first queries turns Chromium's interception off under them, and
  // one of them can then hang unsent (microsoft/playwright#41802).
  let held = false;
  await page.route(PAY_ROUTE, async (route) => {
    if (held) return route.continue();
    held = true;
    await route.fetch();
    processed();
    // Never answered: the reload abandons it.
  });
  await signIn(page, system().webUrl);
  await fillCart(page, { book_ddia: 1, bookmark: 1 });
  await page.getByTestId('pay').click();
  await firstProcessed;
  const keyBeforeReload = await checkoutState(page).getAttribute('data-idempotency-key');
  expect(keyBeforeReload).toBeTruthy();

  await page.reload();
  // Sent without an answer: the outcome is unknown, the intent stays locked to its key.
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'outcome_unknown');
  await expect(page.getByTestId('unfinished-intent')).toContainText(keyBeforeReload!);
  await expect(page.getByTestId('quantity-book_ddia')).toHaveValue('1');
  await expect(page.getByTestId('quantity-book_ddia')).toBeDisabled();
  await page.getByTestId('retry').click();

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(shown.idempotencyKey).toBe(keyBeforeReload);
  expect(new Set(sent.keys)).toEqual(new Set([keyBeforeReload]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  await expectInvariant(system(), [shown]);
});

test('a finished payment ends the intent: the next purchase gets a new key', async ({ page }) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { bookmark: 1 });
  await page.getByTestId('pay').click();
  const first = await waitForTerminal(page);
  await page.getByTestId('new-purchase').click();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'idle');
  await page.getByTestId('pay').click();
  const second = await waitForTerminal(page);

  expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
  expect(second.paymentId).not.toBe(first.paymentId);
  expect((await readShown(page)).state).toBe('succeeded');
  await expectInvariant(system(), [first, second]);
});

test('the operator cockpit shows the payment, its completed key and its finished outbox job', async ({
  page,
}, testInfo) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_pragprog: 1 });
  await page.getByTestId('pay').click();
  const shown = await waitForTerminal(page);
  await page.screenshot({ path: testInfo.outputPath('checkout.png'), fullPage: true });

  await page.goto(`${system().webUrl}/ops`);
  // The shopper's session does not open the cockpit: sign in as the merchant's operator.
  await expect(page.getByTestId('operator-required')).toBeVisible();
  await signInAsOperator(page, system());
  // Earlier tests and specs paid too: long tables start folded, so unfold them.
  for (const table of ['ops-payments', 'ops-keys', 'ops-outbox', 'ops-ledger']) {
    await showCockpitTable(page, table);
  }
  const paymentRow = page
    .getByTestId('ops-payments')
    .getByRole('row')
    .filter({ hasText: shown.paymentId });
  await expect(paymentRow).toContainText('succeeded');
  await expect(paymentRow).toContainText(shown.idempotencyKey);
  const keyRow = page
    .getByTestId('ops-keys')
    .getByRole('row')
    .filter({ hasText: shown.idempotencyKey });
  await expect(keyRow).toContainText('completed');
  const jobRow = page
    .getByTestId('ops-outbox')
    .getByRole('row')
    .filter({ hasText: shown.paymentId });
  await expect(jobRow).toContainText('done');
  // The server read the processor's ledger over its admin API: one charge, the app agrees.
  const ledgerRow = page
    .getByTestId('ops-ledger')
    .getByRole('row')
    .filter({ hasText: shown.paymentId });
  await expect(ledgerRow.locator('[data-verdict]')).toHaveAttribute('data-verdict', 'agrees');
  await expect(ledgerRow).toContainText(/pi_\w+/);
  await expect(page.getByTestId('ops-ledger-section')).toHaveAttribute(
    'data-processor',
    'reachable',
  );
  await page.screenshot({ path: testInfo.outputPath('ops.png'), fullPage: true });
});

test('an unreachable key store answers 503: nothing charged, and Retry with the same key pays once', async ({
  page,
}) => {
  await signIn(page, system().webUrl);
  await fillCart(page, { book_sre: 1, book_ddia: 1 });

  // The key store stops answering: a transaction holds an exclusive lock on its table, so
  // the store call outlives its timeout and the server fails closed.
  const sql = postgres(system().databaseUrl, { max: 1, onnotice: () => {} });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked: () => void = () => {};
  const lockHeld = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const holder = sql.begin(async (tx) => {
    await tx`lock table idempotency_keys in access exclusive mode`;
    locked();
    await released;
  });
  try {
    await lockHeld;
    await page.getByTestId('pay').click();
    await expect(checkoutState(page)).toHaveAttribute('data-state', 'store_unavailable');
    await expect(checkoutState(page)).toContainText('Nothing was charged');
  } finally {
    release();
    await holder;
    await sql.end({ timeout: 5 });
  }
  const keyDuringOutage = await checkoutState(page).getAttribute('data-idempotency-key');

  await page.getByTestId('retry').click();
  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(shown.idempotencyKey).toBe(keyDuringOutage);
  await expectInvariant(system(), [shown]);
});

test('the same checkout still running on the server: the page waits out Retry-After with the same key', async ({
  page,
}) => {
  const sent = recordPayRequests(page);
  await signIn(page, system().webUrl);
  await fillCart(page, { bookmark: 4 });

  // checkout.pay runs in atomic idempotency mode: the key is inserted (completed) at the end of
  // the payment transaction, and a duplicate waits on that uncommitted key row for up to the
  // connection's lock_timeout (5 s) before answering 409 in use. Keep the FIRST request's
  // transaction open right after its key insert, the way a slow commit would: a trigger makes
  // it wait for an advisory lock this test holds (with no lock_timeout of its own).
  const sql = postgres(system().databaseUrl, { max: 1, onnotice: () => {} });
  await sql.unsafe(`
    create or replace function e2e_hold_checkout_key() returns trigger language plpgsql as $$
    begin
      perform set_config('lock_timeout', '0', true);
      perform pg_advisory_xact_lock(424242);
      return new;
    end $$;
    create trigger e2e_hold_checkout_key after insert on idempotency_keys
      for each row when (new.operation = 'checkout.pay') execute function e2e_hold_checkout_key();`);
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked: () => void = () => {};
  const lockHeld = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const holder = sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(424242)`;
    locked();
    await released;
  });
  try {
    await lockHeld;
    await page.getByTestId('pay').click();
    await expect(checkoutState(page)).toHaveAttribute('data-state', 'in_flight');
    // The customer reloads and pays again: same intent, same key, while the first runs.
    await page.reload();
    await page.getByTestId('retry').click();
    // The duplicate waits out lock_timeout on the first one's key row, then gets 409 in use.
    await expect(checkoutState(page)).toHaveAttribute('data-state', 'conflict_waiting', {
      timeout: 20_000,
    });
    await expect(checkoutState(page)).toContainText('already being processed');
  } finally {
    release();
    await holder;
    await sql.unsafe(`drop trigger if exists e2e_hold_checkout_key on idempotency_keys;
      drop function if exists e2e_hold_checkout_key();`);
    await sql.end({ timeout: 5 });
  }

  const shown = await waitForTerminal(page);
  expect(shown.state).toBe('succeeded');
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(page.getByTestId('replayed-notice')).toBeVisible();
  await expectInvariant(system(), [shown]);
});
