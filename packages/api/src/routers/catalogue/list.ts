import { products } from '@once/db/schema';
import { asc, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';

/**
 * The calling tenant's products (`unitAmount` in minor units), the only prices `checkout.pay`
 * will charge.
 */
export async function listCatalogue({ ctx }: { ctx: { db: Database; tenantId: string } }) {
  return ctx.db
    .select({
      productId: products.id,
      name: products.name,
      unitAmount: products.unitAmount,
      currency: products.currency,
    })
    .from(products)
    .where(eq(products.tenantId, ctx.tenantId))
    .orderBy(asc(products.name));
}
