import AxeBuilder from '@axe-core/playwright';
import { expect, type Page, test } from '@playwright/test';
import { fillCart, signIn, waitForTerminal } from '../support/checkout-page.ts';
import { signInAsOperator } from '../support/operator-sign-in.ts';
import { useTestSystem } from '../support/system.ts';

// The cockpit as a presenter sees it after a run of payments: the ledger verdict, the parts
// and the last switch stay in view at the top while the page scrolls; long tables fold into
// their heading; at phone width nothing scrolls sideways but the tables inside their cards.
const system = useTestSystem({ chaos: true });

const DESKTOP = { width: 1280, height: 900 };
const SIDE_BY_SIDE = { width: 960, height: 900 };
const PHONE = { width: 390, height: 844 };

/** How many payments the run makes: more than a short table holds (8), so tables fold. */
const PAYMENTS = 10;

/** The browser globals the page functions below use (this project compiles without the DOM lib). */
interface BrowserGlobals {
  document: { documentElement: { scrollWidth: number; scrollHeight: number } };
  scrollTo: (x: number, y: number) => void;
}

function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

async function pageWidth(page: Page): Promise<number> {
  return page.evaluate(
    () => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth,
  );
}

/** What sticks out past the right edge, for the failure message: "tag.class right=982". */
async function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type El = {
      tagName: string;
      className: unknown;
      getBoundingClientRect: () => { right: number };
    };
    const doc = (
      globalThis as unknown as {
        document: {
          documentElement: { clientWidth: number };
          querySelectorAll: (s: string) => Iterable<El>;
        };
      }
    ).document;
    const edge = doc.documentElement.clientWidth;
    return [...doc.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > edge + 0.5)
      .slice(0, 8)
      .map(
        (el) =>
          `${el.tagName.toLowerCase()}.${String(el.className)} right=${Math.round(el.getBoundingClientRect().right)}`,
      );
  });
}

async function scrollToBottom(page: Page): Promise<void> {
  await page.evaluate(() => {
    const g = globalThis as unknown as BrowserGlobals;
    g.scrollTo(0, g.document.documentElement.scrollHeight);
  });
}

/** The strip is on screen: its top edge within the viewport's first 10 px. */
async function expectStripInView(page: Page): Promise<void> {
  const box = await page.getByTestId('verdict-strip').boundingBox();
  expect(box, 'the strip is laid out').not.toBeNull();
  expect(box?.y ?? -1).toBeGreaterThanOrEqual(-1);
  expect(box?.y ?? 999).toBeLessThan(10);
}

test('a new checkout says what Pay needs before the cart has an item', async ({
  page,
}, testInfo) => {
  await page.setViewportSize(DESKTOP);
  await signIn(page, system().webUrl);
  await expect(page.getByTestId('cart-hint')).toHaveText(/Add an item to pay/);
  await page.screenshot({ path: testInfo.outputPath('checkout-empty-1280.png') });
  await expect(page.getByTestId('pay')).toBeDisabled();
  await fillCart(page, { book_sre: 2 });
  await expect(page.getByTestId('cart-hint')).toHaveText('2 items in the cart.');
});

test('after ten payments the verdict stays in view, tables fold, and a phone does not scroll sideways', async ({
  page,
}, testInfo) => {
  const problems = watchConsole(page);
  await signIn(page, system().webUrl);
  for (let i = 0; i < PAYMENTS; i++) {
    if (i > 0) await page.getByTestId('new-purchase').click();
    // One decline among them: a payment with no charge still agrees with the ledger.
    await fillCart(page, { book_sre: 1 + (i % 3) }, i === 3 ? '4000000000000002' : undefined);
    await page.getByTestId('pay').click();
    await waitForTerminal(page);
  }

  await page.setViewportSize(DESKTOP);
  await page.goto(`${system().webUrl}/ops`);
  await signInAsOperator(page, system());
  await expect(page.getByTestId('chaos-switches')).toBeVisible();

  // A switch that harms no payment, so the strip has an answer to show.
  await page.getByRole('button', { name: 'Processor: duplicate webhook' }).click();
  await expect(page.getByTestId('strip-press')).toContainText(/Processor: duplicate webhook:/);

  const verdict = page.getByTestId('strip-verdict');
  await expect(verdict).toHaveText(
    new RegExp(`${PAYMENTS} payments, ${PAYMENTS - 1} charges, all agree`),
  );
  await expect(verdict).toHaveAttribute('data-tone', 'ok');
  await expect(page.getByTestId('strip-parts').locator('[data-strip-part="web"]')).toHaveAttribute(
    'data-state',
    'up',
  );

  // The top of the page as the README shows it (docs/screenshots/cockpit.png is taken from here).
  await page.setViewportSize({ width: 1280, height: 1100 });
  await page.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollTo(0, 0));
  await page.mouse.move(0, 0);
  await page.screenshot({ path: testInfo.outputPath('cockpit-docs.png') });
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: testInfo.outputPath('cockpit-1280-top.png') });

  // Long tables fold into their heading with the count; a click opens one.
  await expect(page.getByTestId('ops-payments-count')).toHaveText(`${PAYMENTS} rows`);
  await expect(page.getByTestId('ops-payments')).toBeHidden();
  await expect(page.getByTestId('ops-ledger')).toBeHidden();
  await page.getByRole('heading', { name: 'Payments', exact: true }).click();
  await expect(page.getByTestId('ops-payments')).toBeVisible();
  // It stays open through the next refreshes (the operator chose).
  await page.waitForTimeout(2_500);
  await expect(page.getByTestId('ops-payments')).toBeVisible();

  const axe = await new AxeBuilder({ page }).analyze();
  const serious = axe.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(serious, 'cockpit axe-core').toEqual([]);

  await page.screenshot({ path: testInfo.outputPath('cockpit-1280.png') });
  await page.screenshot({ path: testInfo.outputPath('cockpit-1280-full.png'), fullPage: true });
  await scrollToBottom(page);
  await expectStripInView(page);
  await page.screenshot({ path: testInfo.outputPath('cockpit-1280-bottom.png') });

  await page.setViewportSize(SIDE_BY_SIDE);
  await page.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollTo(0, 0));
  await page.screenshot({ path: testInfo.outputPath('cockpit-960.png') });
  await scrollToBottom(page);
  await expectStripInView(page);
  await page.screenshot({ path: testInfo.outputPath('cockpit-960-bottom.png') });
  expect(
    await pageWidth(page),
    `no sideways scrolling at 960 px: ${await overflowing(page)}`,
  ).toBeLessThanOrEqual(960);

  await page.setViewportSize(PHONE);
  await page.evaluate(() => (globalThis as unknown as BrowserGlobals).scrollTo(0, 0));
  const phoneWidth = await pageWidth(page);
  testInfo.annotations.push({ type: 'scrollWidth at 390 px', description: String(phoneWidth) });
  expect(
    phoneWidth,
    `no sideways scrolling at 390 px: ${await overflowing(page)}`,
  ).toBeLessThanOrEqual(PHONE.width);
  await page.screenshot({ path: testInfo.outputPath('cockpit-390.png') });
  await page.screenshot({ path: testInfo.outputPath('cockpit-390-full.png'), fullPage: true });
  await page
    .getByTestId('chaos-switches')
    .screenshot({ path: testInfo.outputPath('chaos-390.png') });
  await page
    .locator('section.card')
    .filter({ has: page.getByTestId('ops-payments') })
    .screenshot({ path: testInfo.outputPath('payments-390.png') });
  // An open table scrolls inside its card, and the page still does not.
  const table = page.getByTestId('ops-payments');
  await expect(table).toBeVisible();
  const scroller = page.locator('section.scroll').filter({ has: table });
  const [inner, outer] = await scroller.evaluate((el) => {
    const box = el as unknown as { scrollWidth: number; clientWidth: number };
    return [box.scrollWidth, box.clientWidth];
  });
  expect(inner, 'the payments table is wider than its card').toBeGreaterThan(outer);
  expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);

  expect(problems).toEqual([]);
});
