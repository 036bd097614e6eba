import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bannerUrls, demoBanner } from '@once/scripts/demo-banner';
import { DEFAULT_RESTART_POLICY } from '@once/scripts/restart-policy';
import type { RunningSystem } from '@once/scripts/start-system';
import { type BrowserContext, expect, type Page } from '@playwright/test';
import { signInAsOperator } from './operator-sign-in.ts';

/** The README's stage: checkout and cockpit side by side in one browser, 960 px each. */
const SIDE_BY_SIDE = { width: 960, height: 900 };

/** Where the scene pictures go when `ONCE_SCREENSHOTS=1`: the README links them. */
const SCREENSHOTS = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/screenshots');

/** How long a switch's answer is held in the browser, so its pending state can be seen. */
const PRESS_HOLD_MS = 400;

export interface Stage {
  checkout: Page;
  cockpit: Page;
  /** The checkout's and the cockpit's URLs, as the launcher's banner prints them. */
  urls: { checkout: string; operator: string };
}

/**
 * The URLs `npm run demo`'s banner prints for this system: what a presenter opens, so what the
 * stage opens (a 3-D Secure shopper comes back to the origin the processor was given; a test
 * on any other origin would miss a banner that disagrees with it).
 */
function bannerUrlsOf(system: RunningSystem): Stage['urls'] {
  return bannerUrls(
    demoBanner({
      database: 'a throw-away PostgreSQL',
      system,
      apiKeys: {},
      chaos: true,
      restart: DEFAULT_RESTART_POLICY,
    }),
  );
}

/**
 * Opens the stage the way the README's script does: the cockpit signed in as Acme Books'
 * operator and the checkout signed in as Acme Books, two pages of ONE browser context (the
 * lost-response switch marks that browser).
 */
export async function openStage(context: BrowserContext, system: RunningSystem): Promise<Stage> {
  const urls = bannerUrlsOf(system);
  const cockpit = await context.newPage();
  await cockpit.setViewportSize(SIDE_BY_SIDE);
  await cockpit.goto(urls.operator);
  await signInAsOperator(cockpit, system);
  await expect(cockpit.getByTestId('chaos-switches')).toBeVisible();
  const checkout = await context.newPage();
  await checkout.setViewportSize(SIDE_BY_SIDE);
  // Signed in already: the operator's session of this browser may pay too.
  await checkout.goto(urls.checkout);
  await expect(checkout.getByTestId('merchant-name')).toHaveText('Acme Books');
  return { checkout, cockpit, urls };
}

/**
 * Starts a scene on the cockpit ("New scene"): the strip counts from here, so it can say
 * "1 payment, 1 charge, all agree" for this scene alone.
 */
export async function newScene(cockpit: Page): Promise<void> {
  await cockpit.getByRole('button', { name: 'New scene' }).click();
  await expect(cockpit.getByTestId('strip-verdict')).toContainText('0 payments');
}

/**
 * Presses a chaos switch with the mouse and waits for its answer in the strip. The answer is
 * held back a moment on its way to the page, so the pressed button's pending state ("pressing…",
 * aria-busy, every switch disabled) is checked on each press.
 */
export async function pressSwitch(cockpit: Page, label: string, says: RegExp): Promise<void> {
  // Routed once per page and never unrouted: turning interception off while the cockpit polls
  // can leave a poll hanging unsent in Chromium (microsoft/playwright#41802).
  if (!heldPresses.has(cockpit)) {
    heldPresses.add(cockpit);
    await cockpit.route('**/api/trpc/ops.chaosPress**', async (route) => {
      const response = await route.fetch();
      await new Promise((done) => setTimeout(done, PRESS_HOLD_MS));
      await route.fulfill({ response });
    });
  }
  const button = cockpit.getByRole('button', { name: label });
  await button.click();
  await expect(button).toHaveAttribute('aria-busy', 'true');
  await expect(button).toContainText('pressing…');
  await expect(button).toBeDisabled();
  await expect(cockpit.getByTestId('strip-press')).toContainText('pressing…');
  await expect(cockpit.getByTestId('strip-press')).toContainText(says);
  await expect(button).not.toHaveAttribute('aria-busy', 'true');
}

/** Cockpit pages whose switch presses are held back on their way to the page. */
const heldPresses = new WeakSet<Page>();

/**
 * Records every state the checkout's status region takes, in order, as
 * "state: title. detail" ("network_retrying: Connection problem, retrying. No usable ..."),
 * to check what the audience read on the way, not only at the end.
 */
export async function recordCheckoutStates(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    type Element = {
      getAttribute(name: string): string | null;
      querySelector(selector: string): Element | null;
      textContent: string | null;
    };
    const g = globalThis as unknown as {
      document: { querySelector(selector: string): Element | null; body: unknown };
      MutationObserver: new (
        callback: () => void,
      ) => { observe(target: unknown, options: Record<string, boolean>): void };
      onceStates?: string[];
    };
    const seen: string[] = [];
    g.onceStates = seen;
    const note = () => {
      const region = g.document.querySelector('[data-testid="checkout-state"]');
      const state = region?.getAttribute('data-state');
      if (!region || !state || seen.at(-1)?.startsWith(`${state}:`)) return;
      const title = region.querySelector('.status-title')?.textContent ?? '';
      const detail = region.querySelector('.status-detail')?.textContent ?? '';
      seen.push(`${state}: ${title}. ${detail}`);
    };
    note();
    new g.MutationObserver(note).observe(g.document.body, {
      subtree: true,
      attributes: true,
      childList: true,
    });
  });
  return () =>
    page.evaluate(() => [
      ...((globalThis as unknown as { onceStates?: string[] }).onceStates ?? []),
    ]);
}

/**
 * With `ONCE_SCREENSHOTS=1`, writes docs/screenshots/scene-N.png: the checkout and the cockpit
 * side by side, as the audience sees them at the end of the scene.
 */
export async function sceneScreenshot(scene: number, stage: Stage): Promise<void> {
  if (!process.env.ONCE_SCREENSHOTS) return;
  const shots = await Promise.all(
    [stage.checkout, stage.cockpit].map(async (page) => {
      await page.mouse.move(0, 0);
      return (await page.screenshot()).toString('base64');
    }),
  );
  const sheet = await stage.cockpit.context().newPage();
  await sheet.setViewportSize({ width: SIDE_BY_SIDE.width * 2 + 8, height: SIDE_BY_SIDE.height });
  await sheet.setContent(
    `<body style="margin:0;display:flex;gap:8px;background:#94a3b8">${shots
      .map((png) => `<img src="data:image/png;base64,${png}" width="${SIDE_BY_SIDE.width}">`)
      .join('')}</body>`,
  );
  mkdirSync(SCREENSHOTS, { recursive: true });
  await sheet.screenshot({ path: `${SCREENSHOTS}/scene-${scene}.png` });
  await sheet.close();
}
