import type { Database } from '../../database.ts';
import { listMerchantRefunds, readMerchantPayment } from '../../money-actions/index.ts';
import type { PaymentTimelineInput } from './payment-timeline.types.ts';

/**
 * One payment of the caller's tenant with its refunds: what may still be captured, what was
 * received and refunded. The same reads as `GET /api/v1/payments/{id}` and its refunds.
 */
export async function paymentMoney({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: PaymentTimelineInput;
}) {
  const payment = await readMerchantPayment(ctx.db, ctx.tenantId, input.paymentId);
  const refunds = await listMerchantRefunds(ctx.db, ctx.tenantId, input.paymentId);
  return { payment, refunds };
}
