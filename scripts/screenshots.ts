/**
 * Screenshots of a RUNNING demo for the README (by hand: `npx tsx scripts/screenshots.ts
 * --operator-code <the code the demo printed> [--url ...] [--out docs/screenshots]`): the
 * checkout after a real payment, the cockpit after "Kill a worker" and its recovery, and that
 * payment's timeline. Debian's Chromium when present, Playwright's own browser otherwise.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page } from '@playwright/test';
import { repoRoot } from './system/start-system.ts';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: `http://127.0.0.1:${process.env.ONCE_WEB_PORT ?? 3000}` },
    out: { type: 'string', default: path.join(repoRoot, 'docs/screenshots') },
    // The cockpit's demo sign-in asks for the code `npm run demo` printed in its banner.
    'operator-code': { type: 'string' },
  },
});
const operatorCode = values['operator-code'] ?? '';
if (!operatorCode) {
  console.error('pass --operator-code <the operator code `npm run demo` printed>');
  process.exit(1);
}
const webUrl = values.url.replace(/\/$/, '');
const outDir = path.resolve(values.out);
/** One projector-like size at scale 1 keeps each PNG small. */
const viewport = { width: 1280, height: 860 };

async function shoot(page: Page, name: string): Promise<void> {
  const file = path.join(outDir, `${name}.png`);
  await page.screenshot({ path: file, animations: 'disabled' });
  console.log(`wrote ${path.relative(repoRoot, file)}`);
}

async function main(): Promise<void> {
  const health = await fetch(`${webUrl}/api/health`).catch(() => undefined);
  if (!health?.ok) {
    throw new Error(`no demo answering at ${webUrl}: start it with npm run demo (or pass --url)`);
  }
  mkdirSync(outDir, { recursive: true });
  const debianChromium = '/usr/bin/chromium';
  const browser = await chromium.launch({
    ...(existsSync(debianChromium) ? { executablePath: debianChromium } : {}),
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    // Checkout: a shopper pays once and the page shows the outcome.
    const shopper = await browser.newContext({ viewport });
    const checkout = await shopper.newPage();
    await checkout.goto(webUrl);
    await checkout.getByTestId('merchant-tenant_a').click();
    await checkout.getByTestId('quantity-book_sre').fill('1');
    await checkout.getByTestId('card-4242424242424242').check();
    await checkout.getByTestId('pay').click();
    const state = checkout.getByTestId('checkout-state');
    await state.and(checkout.locator('[data-state="succeeded"]')).waitFor({ timeout: 60_000 });
    const paymentId = await state.getAttribute('data-payment-id');
    await shoot(checkout, 'checkout');

    // Cockpit: the operator's view, refreshed with that payment in it.
    const operator = await browser.newContext({ viewport: { ...viewport, height: 1100 } });
    const cockpit = await operator.newPage();
    await cockpit.goto(`${webUrl}/ops`);
    await cockpit.getByLabel('Operator code').fill(operatorCode);
    await cockpit.getByTestId('operator-tenant_a').click();
    await cockpit
      .getByTestId('ops-payments')
      .getByText(paymentId ?? '', { exact: true })
      // In the DOM is enough: a long payments table starts folded.
      .waitFor({ state: 'attached' });
    // With the chaos switches: kill a worker and wait until the parts show it back, so the
    // picture shows a switch's answer and a recovery.
    if (await cockpit.getByTestId('chaos-switches').isVisible()) {
      await cockpit.getByRole('button', { name: 'Kill a worker' }).click();
      await cockpit.getByTestId('chaos-outcome').getByText('SIGKILL').waitFor();
      await cockpit
        .locator('[data-state="up"]', { hasText: /restarted \d+ time/ })
        .first()
        .waitFor({ timeout: 30_000 });
    }
    await cockpit.waitForTimeout(1_500); // one refresh of the parts and the ledger
    await shoot(cockpit, 'cockpit');

    // Timeline of that payment, if this version of the web app has the page.
    if (paymentId) {
      const timelineUrl = `${webUrl}/ops/payments/${encodeURIComponent(paymentId)}`;
      const response = await cockpit.goto(timelineUrl);
      if (response?.ok()) {
        await cockpit.waitForLoadState('networkidle');
        await shoot(cockpit, 'timeline');
      } else {
        console.log(`no timeline page at ${timelineUrl} (${response?.status()}); skipped`);
      }
    }
  } finally {
    await browser.close();
  }
}

main().catch((error: unknown) => {
  console.error(`screenshots failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
