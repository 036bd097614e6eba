/**
 * Minor units as a price, e.g. 4599 usd -> "$45.99".
 *
 * @example
 * formatMoney(4599, 'usd') // '$45.99'
 */
export function formatMoney(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: currency.toUpperCase(),
  }).format(amount / 100);
}
