import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

// Playwright cannot download its browsers on these machines; Debian's Chromium is used
// when present (CI installs it), Playwright's own browser otherwise.
const debianChromium = '/usr/bin/chromium';

export default defineConfig({
  testDir: './tests',
  // Each spec starts the whole system (Postgres, processor, workers, web) as real OS
  // processes and kills some of them; one at a time keeps the 2-core machine honest.
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 180_000,
  expect: { timeout: 20_000 },
  globalSetup: './support/global-setup.ts',
  reporter: [['list']],
  use: {
    headless: true,
    // Recording a trace costs every test CPU whether it is kept or not (retain-on-failure:
    // 15-25% of checkout.spec and checkout-intent.spec's CPU, all passing), and CI keeps no
    // artifacts of a run. To debug a failure, run its spec again with `--trace on`.
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      ...(existsSync(debianChromium) ? { executablePath: debianChromium } : {}),
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    },
  },
});
