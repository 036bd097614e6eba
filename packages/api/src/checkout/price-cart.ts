import type { CartLine } from '@once/db/schema';
import { products } from '@once/db/schema';
import { and, eq, inArray } from 'drizzle-orm';
import type { Queryable } from '../database.ts';
import { ApiError } from '../errors/api-error.ts';

const MIN_LINE_QUANTITY = 1;
export const MAX_LINE_QUANTITY = 99;
/** The processor's (and Stripe's) largest amount for two-decimal currencies. */
const MAX_AMOUNT = 99_999_999;

export interface RequestedLine {
  productId: string;
  quantity: number;
}

export interface PricedCart {
  lines: CartLine[];
  amount: number;
  currency: string;
}

/**
 * Prices a cart from the tenant's catalogue. The client sends only product ids and
 * quantities; every price, name and the total come from the server. Lines naming the same
 * product are merged first, so "2 + 1" and "3" are the same order.
 */
export async function priceCart(
  db: Queryable,
  tenantId: string,
  requested: readonly RequestedLine[],
): Promise<PricedCart> {
  if (requested.length === 0) throw new ApiError('empty_cart');
  const quantities = new Map<string, number>();
  for (const line of requested) {
    quantities.set(line.productId, (quantities.get(line.productId) ?? 0) + line.quantity);
  }
  for (const [productId, quantity] of quantities) {
    if (
      !Number.isInteger(quantity) ||
      quantity < MIN_LINE_QUANTITY ||
      quantity > MAX_LINE_QUANTITY
    ) {
      throw new ApiError(
        'quantity_out_of_range',
        `Quantity of "${productId}" must be between ${MIN_LINE_QUANTITY} and ${MAX_LINE_QUANTITY}`,
        { productId, quantity, min: MIN_LINE_QUANTITY, max: MAX_LINE_QUANTITY },
      );
    }
  }

  const ids = [...quantities.keys()];
  const rows = await db
    .select()
    .from(products)
    .where(and(eq(products.tenantId, tenantId), inArray(products.id, ids)));
  const byId = new Map(rows.map((row) => [row.id, row]));

  const lines: CartLine[] = [];
  for (const [productId, quantity] of quantities) {
    const product = byId.get(productId);
    if (!product) {
      throw new ApiError('unknown_product', `No product "${productId}" in this catalogue`, {
        productId,
      });
    }
    lines.push({ productId, name: product.name, quantity, unitAmount: product.unitAmount });
  }

  const currencies = new Set(rows.map((row) => row.currency));
  if (currencies.size !== 1) {
    throw new ApiError('mixed_currency', 'All products of one payment must share a currency', {
      currencies: [...currencies].sort(),
    });
  }
  const amount = lines.reduce((sum, line) => sum + line.unitAmount * line.quantity, 0);
  if (amount > MAX_AMOUNT) {
    throw new ApiError('amount_out_of_range', `The total may not exceed ${MAX_AMOUNT}`, {
      amount,
      max: MAX_AMOUNT,
    });
  }
  return { lines, amount, currency: [...currencies][0]! };
}
