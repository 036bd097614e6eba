import { expect, test, useSharedSystem } from '../support/system.ts';

const system = useSharedSystem();

test('every process answers its health check and the home page renders', async ({
  page,
  request,
}) => {
  expect((await request.get(`${system().webUrl}/api/health`)).ok()).toBe(true);
  expect((await request.get(`${system().processorUrl}/healthz`)).ok()).toBe(true);
  await page.goto(system().webUrl);
  await expect(page.getByRole('link', { name: 'Once' })).toBeVisible();
  await expect(page.getByRole('heading', { level: 1, name: 'Checkout' })).toBeVisible();
});
