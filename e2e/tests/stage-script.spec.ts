import AxeBuilder from '@axe-core/playwright';
import { expect, type Page, test } from '@playwright/test';
import {
  checkoutState,
  fillCart,
  readShown,
  recordPayRequests,
  retryUntilAccepted,
  waitForTerminal,
} from '../support/checkout-page.ts';
import { showCockpitTable } from '../support/cockpit-table.ts';
import { expectInvariant } from '../support/invariant.ts';
import { ledgerOf } from '../support/processor-ledger.ts';
import {
  newScene,
  openStage,
  pressSwitch,
  recordCheckoutStates,
  type Stage,
  sceneScreenshot,
} from '../support/stage.ts';
import { partLog, useTestSystem } from '../support/system.ts';
import { THREE_D_SECURE_CARD } from '../support/three-d-secure.ts';

// The README's stage script ("On stage: a presenter's script"), one test per scene: each does
// what the row's "Press" column says with the mouse, on the checkout and the cockpit side by
// side in one browser, and checks what its "What the audience sees" column promises. With
// ONCE_SCREENSHOTS=1 each scene leaves docs/screenshots/scene-N.png.
const system = useTestSystem({
  // As `npm run demo` runs it: scene 5 kills PostgreSQL, and with commits acknowledged before
  // they are on disk (the tests' fast mode) a crash loses the cockpit's fresh sign-in (a 401,
  // so the cockpit never shows the restart) or a scene's payment.
  pgDurability: 'durable',
  chaos: true,
  restart: {
    initialDelayMs: 200,
    maxDelayMs: 2_000,
    maxRestarts: 5,
    windowMs: 60_000,
    resetAfterMs: 30_000,
  },
  env: { WORKER_LEASE_MS: '2000', WORKER_POLL_INTERVAL_MS: '300' },
});

/** The strip's verdict once this scene's one payment is settled and checked. */
async function expectOnePaymentOneCharge(stage: Stage): Promise<void> {
  const verdict = stage.cockpit.getByTestId('strip-verdict');
  await expect(verdict).toHaveText(/1 payment, 1 charge, all agree/, { timeout: 30_000 });
  await expect(verdict).toHaveAttribute('data-tone', 'ok');
}

/** One row of a cockpit table, unfolded, by something it shows. */
async function cockpitRow(stage: Stage, table: string, text: string) {
  await showCockpitTable(stage.cockpit, table);
  return stage.cockpit.getByTestId(table).getByRole('row').filter({ hasText: text });
}

/** One step of a test's choreography: `done` settles when `settle` is called. */
function step(): { done: Promise<void>; settle: () => void } {
  let settle!: () => void;
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { done, settle };
}

test.describe.configure({ mode: 'serial' });

test('scene 1, double click: one request, a second tab resumes the same payment, one charge', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  const sent = recordPayRequests(stage.checkout);
  // A presenter opens the second tab within a second or two, while the payment still runs; a
  // test machine's payment settles faster than a page opens. So the first tab does not hear
  // how its payment ends until the second tab has picked it up (its status polls wait).
  let picked: () => void = () => {};
  const pickedUp = new Promise<void>((resolve) => {
    picked = resolve;
  });
  await stage.checkout.route('**/api/trpc/checkout.status**', async (route) => {
    await pickedUp;
    await route.continue();
  });
  await fillCart(stage.checkout, { book_sre: 1 });
  await stage.checkout.getByTestId('pay').dblclick();
  await expect(checkoutState(stage.checkout)).toHaveAttribute('data-payment-id', /^pay_/);

  const second = await context.newPage();
  const sentBySecond = recordPayRequests(second);
  await second.goto(stage.urls.checkout);
  await expect(checkoutState(second)).toContainText('resumed after reload or from another tab');
  picked();
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  const shownBySecond = await waitForTerminal(second);
  expect(shownBySecond.paymentId).toBe(shown.paymentId);
  expect(sent.keys).toEqual([shown.idempotencyKey]);
  expect(sentBySecond.keys).toEqual([]);

  await expect(await cockpitRow(stage, 'ops-keys', shown.idempotencyKey)).toContainText(
    'completed',
  );
  await expectOnePaymentOneCharge(stage);
  await expectInvariant(system(), [shown]);
  await second.close();
  await sceneScreenshot(1, stage);
});

test('scene 2, lost response: the answer is dropped, the checkout retries with its key and is answered as a replay', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  await pressSwitch(
    stage.cockpit,
    "Drop this browser's next payment answer",
    /committed by the server, then its answer is dropped/,
  );
  const sent = recordPayRequests(stage.checkout);
  const states = await recordCheckoutStates(stage.checkout);
  await fillCart(stage.checkout, { book_ddia: 1 });
  await stage.checkout.getByTestId('pay').click();
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  // No answer, a retry with the same key, then the stored payment: in plain words, no raw error.
  const seen = await states();
  expect(seen.map((state) => state.split(':')[0])).toEqual([
    'idle',
    'in_flight',
    'network_retrying',
    'in_flight',
    'processing',
    'succeeded',
  ]);
  expect(seen[2]).toMatch(
    /^network_retrying: Connection problem, retrying\. No usable answer from the server \(the answer was cut off on its way\)\. Retrying in \d+ s with the same key/,
  );
  expect(seen[3]).toContain('Attempt 2, with the same idempotency key');
  expect(sent.keys.length).toBeGreaterThanOrEqual(2);
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  await expect(stage.checkout.getByTestId('replayed-notice')).toHaveText(
    /You were not charged twice/,
  );
  await expectOnePaymentOneCharge(stage);
  await expectInvariant(system(), [shown]);
  await sceneScreenshot(2, stage);
});

test('scene 3, worker killed mid-charge: the worker restarts, the job is taken over, no second confirm', async ({
  context,
}, testInfo) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  await pressSwitch(
    stage.cockpit,
    'Processor: charge, answer too late',
    /the charge is made, then its answer waits/,
  );
  await fillCart(stage.checkout, { book_pragprog: 1 });
  await stage.checkout.getByTestId('pay').click();
  await expect(checkoutState(stage.checkout)).toHaveAttribute('data-state', 'processing');
  // Mid-charge: a worker holds the job, and its confirm has charged at the processor, which
  // holds the answer (the switch says when its fault bit, and on which payment).
  const paymentId = await checkoutState(stage.checkout).getAttribute('data-payment-id');
  await expect(stage.cockpit.getByTestId('fault-use-processor_delay')).toHaveText(
    new RegExp(`^Used \\d\\d:\\d\\d:\\d\\d by ${paymentId}\\.$`),
  );
  await expect(await cockpitRow(stage, 'ops-outbox', paymentId ?? '?')).toContainText('running');
  await pressSwitch(stage.cockpit, 'Kill a worker', /killed with SIGKILL/);
  // In the order the README tells it: the kill lands while the payment is still processing
  // (the webhook the charge sent is held too).
  await expect(checkoutState(stage.checkout)).toHaveAttribute('data-state', 'processing');
  const worker = stage.cockpit.getByTestId('strip-parts').locator('[data-strip-part="worker-1"]');
  await expect(stage.cockpit.locator('[data-part="worker-1"]')).toContainText('restarted 1 time', {
    timeout: 30_000,
  });
  await expect(worker).toHaveAttribute('data-state', 'up');
  // The strip shows the restart too, and keeps the parts in their order.
  await expect(worker).toContainText('up, restarted 1 time');
  expect(
    await stage.cockpit
      .getByTestId('strip-parts')
      .locator('[data-strip-part]')
      .evaluateAll((parts) => parts.map((part) => part.getAttribute('data-strip-part'))),
  ).toEqual(['postgres', 'processor', 'worker-1', 'web']);
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  await expectOnePaymentOneCharge(stage);
  await expectInvariant(system(), [shown]);

  // The timeline: the takeover's claim and its retrieve, and no second confirm.
  const timeline = await context.newPage();
  await timeline.goto(new URL(`/ops/payments/${shown.paymentId}`, stage.urls.operator).href);
  const table = timeline.getByTestId('timeline-table');
  await expect(table).toContainText(
    /Claimed job \w+, attempt 2: the lease of worker-1 had expired/,
  );
  // The takeover asks before sending anything: it retrieves the intent and finds it
  // succeeded, or finds the payment already settled by the webhook that overtook it.
  await expect(table).toContainText(
    /retrieve .*: succeeded|done at attempt 2 without calling the processor: the payment was already succeeded/,
  );
  // The killed worker's confirm never got its answer recorded; the takeover sent none.
  expect(
    await table.getByRole('row').filter({ hasText: 'confirm with key' }).count(),
  ).toBeLessThanOrEqual(1);
  // The held confirm (no answer came back to the killed worker) and the kill where it happened,
  // one cross: the takeover's lease end is no second one.
  const diagram = timeline.getByTestId('timeline-diagram');
  await expect(diagram.locator('[data-kind="held"]')).toHaveCount(1);
  await expect(diagram.locator('[data-kind="held"]')).toContainText('confirm: no answer heard');
  await expect(diagram.locator('[data-kind="lost"]')).toHaveCount(1);
  await expect(diagram.locator('[data-kind="lost"]')).toContainText('killed');
  await expect(table).toContainText(
    /Chaos switch kill_worker pressed: worker-1 \(pid \d+\) killed/,
  );
  await timeline.screenshot({ path: testInfo.outputPath('scene-3-timeline.png'), fullPage: true });
  await timeline.close();
  await sceneScreenshot(3, stage);
});

test('scene 4, the processor charges then drops the connection: the SDK re-sends the confirm, replayed, 1 attempt', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  await pressSwitch(
    stage.cockpit,
    'Processor: charge, then drop the connection',
    /the charge is made, then the connection is dropped/,
  );
  const faultUse = stage.cockpit.getByTestId('fault-use-processor_charge_then_drop');
  await expect(faultUse).toHaveText('Armed: waiting for the next charge.');
  await fillCart(stage.checkout, { bookmark: 2 });
  await stage.checkout.getByTestId('pay').click();
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  // The switch says when its fault bit and which payment it hit, with its timeline a link away.
  await expect(faultUse).toHaveText(
    new RegExp(`^Used \\d\\d:\\d\\d:\\d\\d by ${shown.paymentId}\\.$`),
  );
  await expect(faultUse.getByRole('link', { name: shown.paymentId })).toHaveAttribute(
    'href',
    `/ops/payments/${shown.paymentId}`,
  );
  await expectOnePaymentOneCharge(stage);
  await expect(await cockpitRow(stage, 'ops-outbox', shown.paymentId)).toContainText('1 / ');
  await expectInvariant(system(), [shown]);

  const timeline = await context.newPage();
  await timeline.goto(new URL(`/ops/payments/${shown.paymentId}`, stage.urls.operator).href);
  await expect(timeline.getByTestId('timeline-table')).toContainText(
    /confirm with key .*: replayed/,
  );
  await timeline.close();
  await sceneScreenshot(4, stage);
});

test('scene 5, database restart: PostgreSQL is killed and back on the same data, the payment goes through once', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  const sent = recordPayRequests(stage.checkout);
  const states = await recordCheckoutStates(stage.checkout);
  await fillCart(stage.checkout, { book_sre: 2 });
  await pressSwitch(stage.cockpit, 'Crash-restart PostgreSQL', /SIGKILL|killed/);
  await stage.checkout.getByTestId('pay').click();
  // Fail closed while the database is away: the page says so and offers Retry. It does not
  // retry a 503 by itself; the presenter presses Retry (same key) until PostgreSQL is back.
  await expect(checkoutState(stage.checkout)).toHaveAttribute('data-state', 'store_unavailable');
  await retryUntilAccepted(stage.checkout, 60_000);
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  // In plain words (no SQL, no stack), then Retry with the same key goes through.
  const seen = await states();
  expect(seen).toContain(
    'store_unavailable: Payments are temporarily unavailable. Nothing was charged. Please retry in 2 s.',
  );
  expect(seen.at(-1)).toMatch(/^succeeded: Payment succeeded\. Charged \$79\.98 once\.$/);
  expect(new Set(sent.keys)).toEqual(new Set([shown.idempotencyKey]));
  // Killed once, back once: the launcher's count first (with the part's own lines if not),
  // then the cockpit that shows it.
  const postgres = system()
    .supervisor.status()
    .find((part) => part.name === 'postgres');
  expect(postgres?.restarts, partLog(system(), 'postgres')).toBe(1);
  await expect(stage.cockpit.locator('[data-part="postgres"]')).toContainText('restarted 1 time');
  // Every earlier payment is still there (the scenes before this one), each charged once.
  await stage.cockpit.getByRole('button', { name: 'Count all' }).click();
  await expect(stage.cockpit.getByTestId('strip-verdict')).toHaveText(
    /([2-9]|\d\d) payments, \1 charges, all agree/,
    { timeout: 30_000 },
  );
  await expectInvariant(system(), [shown]);
  await sceneScreenshot(5, stage);
});

test('scene 6, 3-D Secure, the redirect back lost: the web server is killed while the shopper is at the bank; asked again, the return page shows the same payment and key, one charge', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  const page = stage.checkout;
  const sent = recordPayRequests(page);
  await fillCart(page, { book_ddia: 1 }, THREE_D_SECURE_CARD);
  await page.getByTestId('pay').click();
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'requires_action', {
    timeout: 60_000,
  });
  await expect(checkoutState(page)).toContainText('Waiting for your bank');
  const before = await readShown(page);
  await page.getByTestId('go-to-bank').click();
  await expect(page.getByRole('heading', { name: '3D Secure test payment' })).toBeVisible();

  // At the bank, the presenter kills the web server from the cockpit, then completes the
  // authentication: the processor charges, and its redirect back finds no web server.
  await pressSwitch(stage.cockpit, 'Kill the web server', /killed with SIGKILL/);
  const web = stage.cockpit.getByTestId('strip-parts').locator('[data-strip-part="web"]');
  await expect(web).toHaveAttribute('data-state', 'restarting');
  await expect(web).toContainText('restarting');
  const lost = page.waitForEvent('requestfailed', (request) =>
    request.url().includes('/checkout/return'),
  );
  await page.getByRole('button', { name: 'Complete authentication' }).click({ noWaitAfter: true });
  const returnUrl = (await lost).url();
  // Back to the origin the banner printed, where the session and the stored checkout are.
  expect(new URL(returnUrl).origin).toBe(new URL(stage.urls.checkout).origin);

  // Once Parts shows the web server up again, the shopper asks for the return page again.
  await expect(web).toHaveAttribute('data-state', 'up', { timeout: 60_000 });
  await expect(web).toContainText('up, restarted 1 time');
  await page.goto(returnUrl);
  expect(new URL(page.url()).pathname).toBe('/checkout/return');
  await expect(checkoutState(page)).toHaveAttribute('data-state', 'succeeded', {
    timeout: 60_000,
  });
  const shown = await readShown(page);
  expect(shown.paymentId).toBe(before.paymentId);
  expect(shown.idempotencyKey).toBe(before.idempotencyKey);
  expect(sent.keys).toEqual([before.idempotencyKey]);
  await expectOnePaymentOneCharge(stage);
  await expectInvariant(system(), [shown]);
  await sceneScreenshot(6, stage);
});

test('scene 7, double-clicked Refund while the processor drops the refund call: one refund, the key replayed', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  await newScene(stage.cockpit);
  await fillCart(stage.checkout, { book_sre: 1 });
  await stage.checkout.getByTestId('pay').click();
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');

  await pressSwitch(
    stage.cockpit,
    'Processor: refund, then drop the connection',
    /the refund is made, then the connection is dropped/,
  );
  const faultUse = stage.cockpit.getByTestId('fault-use-processor_refund_then_drop');
  await expect(faultUse).toHaveText('Armed: waiting for the next refund.');

  // The payment's timeline, opened from the cockpit's Payments table in a tab of its own.
  const row = await cockpitRow(stage, 'ops-payments', shown.paymentId);
  const [timeline] = await Promise.all([
    context.waitForEvent('page'),
    row.getByRole('link', { name: /^Timeline/ }).click({ modifiers: ['ControlOrMeta'] }),
  ]);
  await expect(timeline.getByTestId('money-actions')).toBeVisible();
  const money = timeline.getByTestId('money-actions');
  await money.getByLabel(/^Amount \(empty: the rest/).fill('10.00');
  await money.getByRole('button', { name: 'Refund', exact: true }).dblclick();
  await expect(timeline.getByTestId('refund-answer')).toHaveText(
    /^Done: refund of \$10\.00 succeeded/,
    { timeout: 60_000 },
  );

  // The processor's ledger: the charge and ONE refund, though the refund call was cut and the
  // button pressed twice.
  expect(await ledgerOf(system(), shown.paymentId)).toEqual([
    expect.stringMatching(/^charge \d+$/),
    'refund 1000',
  ]);
  // One key for the double click: executed once, the second click answered as its replay.
  const story = timeline.getByTestId('key-stories').locator('tr', { hasText: 'refund' });
  await expect(story).toHaveCount(1);
  await expect(story.locator('li').first()).toContainText('executed');
  await expect(story).toContainText('replayed');
  // The worker's refund call was cut after the refund was made; the SDK re-sent it with the
  // same key and the processor answered from the key.
  await expect(timeline.getByTestId('timeline-table')).toContainText(
    /refund with key .*: replayed/,
  );
  // The switch bit that very refund, and names its payment.
  await expect(faultUse).toHaveText(
    new RegExp(`^Used \\d\\d:\\d\\d:\\d\\d by ${shown.paymentId}\\.$`),
  );
  await expectOnePaymentOneCharge(stage);
  await expectInvariant(system(), [shown]);
  await timeline.close();
  await sceneScreenshot(7, stage);
});

test('New scene: a payment made since the strip last read the ledger is not counted in it', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  // The strip's next read of the ledger is made before the payment and answered after it: what
  // the strip holds when the presenter presses "New scene" right after paying.
  let holdNextRead = true;
  const [readMade, paid, staleAnswered] = [step(), step(), step()];
  // Routed for the rest of the test, never unrouted (see pressSwitch in support/stage.ts).
  await stage.cockpit.route('**/api/trpc/ops.ledger**', async (route) => {
    if (!holdNextRead) return route.continue();
    holdNextRead = false;
    const before = await route.fetch();
    readMade.settle();
    await paid.done;
    await route.fulfill({ response: before });
    staleAnswered.settle();
  });
  await readMade.done;
  await fillCart(stage.checkout, { book_sre: 1 });
  await stage.checkout.getByTestId('pay').click();
  const shown = await waitForTerminal(stage.checkout);
  paid.settle();
  await staleAnswered.done;
  await stage.cockpit.getByRole('button', { name: 'New scene' }).click();
  // Once the ledger the strip reads holds the payment, the scene still counts none.
  await expect(await cockpitRow(stage, 'ops-ledger', shown.paymentId)).toHaveCount(1);
  await expect(stage.cockpit.getByTestId('strip-verdict')).toContainText('0 payments');
});

/** The console errors a page logs from here on. */
function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

test('a shopper signing in on the checkout of the same browser leaves the cockpit its operator session', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  const errors = [...[stage.checkout, stage.cockpit].map(consoleErrors)];
  // The checkout pays with the cockpit's session until it signs in on its own.
  await stage.checkout.getByRole('button', { name: 'Switch merchant' }).click();
  await stage.checkout.getByTestId('merchant-tenant_b').click();
  await expect(stage.checkout.getByTestId('merchant-name')).toHaveText('Globex Coffee');
  await stage.cockpit.reload();
  await expect(stage.cockpit.getByTestId('chaos-switches')).toBeVisible();
  await expect(stage.cockpit.getByText(/^Payments of/)).toContainText('Acme Books');
  await expect(stage.cockpit.getByTestId('strip-verdict')).toHaveAttribute('data-tone', 'ok');
  await stage.checkout.reload();
  await expect(stage.checkout.getByTestId('merchant-name')).toHaveText('Globex Coffee');
  expect(errors.flat()).toEqual([]);
});

test('the checkout reopened after a payment succeeded shows that payment, Pay disabled', async ({
  context,
}) => {
  const stage = await openStage(context, system());
  const errors = consoleErrors(stage.checkout);
  await fillCart(stage.checkout, { bookmark: 1 });
  await stage.checkout.getByTestId('pay').click();
  const shown = await waitForTerminal(stage.checkout);
  expect(shown.state).toBe('succeeded');
  await stage.checkout.reload();
  const state = checkoutState(stage.checkout);
  await expect(state).toHaveAttribute('data-state', 'succeeded');
  await expect(state).toHaveAttribute('data-payment-id', shown.paymentId);
  await expect(state).toHaveAttribute('data-idempotency-key', shown.idempotencyKey);
  await expect(state).not.toContainText('Nothing has been sent yet');
  await expect(stage.checkout.getByTestId('pay')).toBeDisabled();
  const results = await new AxeBuilder({ page: stage.checkout })
    .include('[data-testid="checkout-state"]')
    .analyze();
  expect(
    results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
  ).toEqual([]);
  expect(errors).toEqual([]);
});
