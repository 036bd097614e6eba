import { expect, test } from '@playwright/test';
import type { RunningSystem } from '../../scripts/system/start-system.ts';
import { startTestSystem } from '../support/system';

let system: RunningSystem;

test.beforeAll(async () => {
  system = await startTestSystem();
});

test.afterAll(async () => {
  await system?.stop();
});

test('every process answers its health check and the home page renders', async ({
  page,
  request,
}) => {
  expect((await request.get(`${system.webUrl}/api/health`)).ok()).toBe(true);
  expect((await request.get(`${system.processorUrl}/healthz`)).ok()).toBe(true);
  await page.goto(system.webUrl);
  await expect(page.getByRole('heading', { name: 'Once' })).toBeVisible();
});
