import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import { askProcessorAbout, type ProcessorLedger } from '../../processor/processor-admin.ts';
import type { OpsLedgerResult, OpsLedgerRow } from './ledger.types.ts';
import { judgePayment } from './ledger-verdict.ts';
import { latestPaymentsOf, type OpsListInput } from './lists.ts';
import { processorAccountOf } from './webhook-deliveries.ts';

/**
 * The tenant's latest payments next to the processor's ledger: how many successful charges
 * the processor holds for each, with which PaymentIntent and amount, and a verdict. If the
 * ledger cannot be read, the app side is still answered (`processor: 'unreachable'`, every
 * verdict `unverified`) rather than an error (see `askProcessorAbout`).
 */
export async function compareWithProcessorLedger(
  ctx: { db: Database; tenantId: string; processorLedger: ProcessorLedger; clock: Clock },
  input: OpsListInput,
): Promise<OpsLedgerResult> {
  const accountId = await processorAccountOf(ctx.db, ctx.tenantId);
  // App first, ledger second: a charge that lands in between then shows as `app_behind`
  // (true at that instant). The other order would show a payment that succeeded in between
  // as `succeeded_without_charge`, a false alarm.
  const rows = await latestPaymentsOf(ctx.db, ctx.tenantId, input.limit);
  const asked = await askProcessorAbout(accountId, (account) =>
    ctx.processorLedger.chargesOf(account),
  );
  return {
    processor: asked.processor,
    processorAccountId: accountId,
    processorError: asked.processorError,
    checkedAt: ctx.clock.now().toISOString(),
    rows: rows.map((row): OpsLedgerRow => {
      const { side, ...judged } = judgePayment(row, asked);
      return {
        paymentId: row.id,
        appStatus: row.status,
        appAmount: row.amount,
        appCurrency: row.currency,
        appPaymentIntentId: row.processorPaymentIntentId,
        downstreamKey: row.downstreamKey,
        createdAt: row.createdAt.toISOString(),
        processor: side,
        ...judged,
      };
    }),
  };
}
