import type { RunningSystem } from '@once/scripts/start-system';
import type { Page } from '@playwright/test';

/**
 * On the cockpit's sign-in, signs in as the demo operator of `tenantId` the way a presenter
 * does: types the run's operator code (the launcher made it and gave it to the web process as
 * ONCE_OPERATOR_CODE) and picks the merchant.
 */
export async function signInAsOperator(
  page: Page,
  system: Pick<RunningSystem, 'operatorCode'>,
  tenantId = 'tenant_a',
): Promise<void> {
  await page.getByLabel('Operator code').fill(system.operatorCode);
  await page.getByTestId(`operator-${tenantId}`).click();
}
