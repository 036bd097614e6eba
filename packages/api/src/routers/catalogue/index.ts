import { products } from '@once/db/schema';
import { asc, eq } from 'drizzle-orm';
import { authedProcedure, createTRPCRouter } from '../../trpc.ts';

export const catalogueRouter = createTRPCRouter({
  /** The calling tenant's products (`unitAmount` in minor units), the only prices `checkout.pay` will charge. */
  list: authedProcedure.query(({ ctx }) =>
    ctx.db
      .select({
        productId: products.id,
        name: products.name,
        unitAmount: products.unitAmount,
        currency: products.currency,
      })
      .from(products)
      .where(eq(products.tenantId, ctx.tenantId))
      .orderBy(asc(products.name)),
  ),
});
