import { products } from '@once/db/schema';
import { asc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import type { CatalogueProduct } from './list.types.ts';

/**
 * The calling tenant's products, the only prices `checkout.pay` will charge.
 *
 * @example
 * const items = await listCatalogue({ ctx: { db, tenantId: 'tenant_a' } });
 */
export async function listCatalogue({
  ctx,
}: {
  ctx: { db: Database; tenantId: string };
}): Promise<CatalogueProduct[]> {
  const rows = await ctx.db
    .select()
    .from(products)
    .where(eq(products.tenantId, ctx.tenantId))
    .orderBy(asc(products.name));
  return rows.map((row) => ({
    productId: row.id,
    name: row.name,
    unitAmount: row.unitAmount,
    currency: row.currency,
  }));
}
