import type { Database } from '../../database.ts';
import {
  listMerchantRefunds,
  type MerchantPayment,
  readMerchantPayment,
} from '../../money-actions/index.ts';
import type { MerchantRefund } from '../../money-actions/merchant-refund.ts';
import type { PaymentTimelineInput } from './payment-timeline.types.ts';

/** What the cockpit's money buttons need of a payment: its money, as the merchant reads it. */
interface PaymentMoney {
  payment: MerchantPayment;
  /** Oldest first, with their states: `pending`, `succeeded`, `failed`. */
  refunds: MerchantRefund[];
}

/**
 * One payment of the caller's tenant with its refunds: what may still be captured, what was
 * received and refunded. The same reads as `GET /api/v1/payments/{id}` and its refunds.
 *
 * @example
 * const { payment, refunds } = await paymentMoney({ ctx: { db, tenantId }, input: { paymentId } });
 */
export async function paymentMoney({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string };
  input: PaymentTimelineInput;
}): Promise<PaymentMoney> {
  const payment = await readMerchantPayment(ctx.db, ctx.tenantId, input.paymentId);
  const refunds = await listMerchantRefunds(ctx.db, ctx.tenantId, input.paymentId);
  return { payment, refunds };
}
