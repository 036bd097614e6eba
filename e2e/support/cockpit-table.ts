import type { Page } from '@playwright/test';

/**
 * Unfolds one of the cockpit's tables the way an operator does, by its summary: a table with
 * more than a few rows starts folded, and a folded table's rows are not on screen.
 */
export async function showCockpitTable(page: Page, testId: string): Promise<void> {
  const details = page.locator('details', { has: page.getByTestId(testId) });
  // Only once its rows have loaded (the count shows) has the table folded or not: while it
  // loads it is open, and it folds when more than a few rows arrive.
  await page.getByTestId(`${testId}-count`).waitFor({ state: 'attached' });
  if (!(await details.evaluate((element) => (element as { open: boolean }).open))) {
    await details.locator('summary').click();
  }
}
