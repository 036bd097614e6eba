import type { payments } from '@once/db/schema';
import type { LedgerCharge, ProcessorAnswer } from '../../processor/processor-admin.ts';
import type { LedgerVerdict, ProcessorSide } from './ledger.types.ts';

/** What the verdict needs of the app's payment row. */
export type AppPaymentFacts = Pick<
  typeof payments.$inferSelect,
  | 'tenantId'
  | 'id'
  | 'status'
  | 'amount'
  | 'currency'
  | 'downstreamKey'
  | 'processorPaymentIntentId'
>;

/** One payment's side of the ledger and its verdict; `unverified` when there are no charges to compare with. */
export function judgePayment(
  payment: AppPaymentFacts,
  asked: ProcessorAnswer<LedgerCharge[]>,
): { side: ProcessorSide | null; verdict: LedgerVerdict; reason: string } {
  if (!asked.answer) return { side: null, verdict: 'unverified', reason: asked.processorError };
  const side = summariseCharges(chargesOfPayment(payment, asked.answer));
  return { side, ...judgeLedgerVerdict(payment, side) };
}

/**
 * The ledger charges that belong to one payment: sent with its downstream key, OR tagged with
 * its `metadata.payment_id` (and this tenant, when the charge names one). Both, because a
 * charge made under a different key (a bug, a manual retry) is exactly what must show up
 * as a double charge, and a charge whose metadata was lost still carries the key.
 */
export function chargesOfPayment(
  payment: AppPaymentFacts,
  charges: readonly LedgerCharge[],
): LedgerCharge[] {
  return charges
    .filter(
      (charge) =>
        charge.idempotencyKey === payment.downstreamKey ||
        (charge.metadata.payment_id === payment.id &&
          (charge.metadata.tenant_id === undefined ||
            charge.metadata.tenant_id === payment.tenantId)),
    )
    .sort((a, b) => a.seq - b.seq);
}

/** Sums a payment's charges into the processor's side of the comparison. */
export function summariseCharges(charges: readonly LedgerCharge[]): ProcessorSide {
  return {
    chargeCount: charges.length,
    chargedAmount: charges.reduce((sum, charge) => sum + charge.amount, 0),
    currency: charges[0]?.currency ?? null,
    paymentIntentId: charges[0]?.paymentIntentId ?? null,
    paymentIntentIds: charges.map((charge) => charge.paymentIntentId),
  };
}

/**
 * Compares one payment with the processor's charges for it. Pure: the same facts always give
 * the same verdict, so the table below is the whole policy.
 */
export function judgeLedgerVerdict(
  payment: AppPaymentFacts,
  processor: ProcessorSide,
): { verdict: LedgerVerdict; reason: string } {
  const { status } = payment;
  if (processor.chargeCount > 1) {
    return {
      verdict: 'double_charge',
      reason: `${processor.chargeCount} charges: ${processor.paymentIntentIds.join(', ')}`,
    };
  }
  if (processor.chargeCount === 1) {
    // requires_action: the shopper answered the bank's challenge; the app hears it next.
    if (status === 'processing' || status === 'unknown' || status === 'requires_action') {
      return { verdict: 'app_behind', reason: `charged, app still ${status}` };
    }
    if (status === 'declined' || status === 'failed' || status === 'canceled') {
      return {
        verdict: 'charged_but_app_declined_or_failed',
        reason: `charged, app says ${status}`,
      };
    }
    if (
      payment.processorPaymentIntentId !== null &&
      payment.processorPaymentIntentId !== processor.paymentIntentId
    ) {
      return {
        verdict: 'mismatch',
        reason: `app records ${payment.processorPaymentIntentId}, ledger charged ${processor.paymentIntentId}`,
      };
    }
    if (processor.chargedAmount !== payment.amount || processor.currency !== payment.currency) {
      return {
        verdict: 'mismatch',
        reason: `app ${payment.amount} ${payment.currency}, ledger ${processor.chargedAmount} ${processor.currency}`,
      };
    }
    return { verdict: 'agrees', reason: 'succeeded, charged once' };
  }
  if (status === 'succeeded') {
    return {
      verdict: 'succeeded_without_charge',
      reason: 'app says succeeded, ledger has no charge',
    };
  }
  if (status === 'declined' || status === 'failed' || status === 'canceled') {
    return { verdict: 'agrees', reason: `${status}, nothing charged` };
  }
  return { verdict: 'not_charged', reason: `${status}, no charge yet` };
}
