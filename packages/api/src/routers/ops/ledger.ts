import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
} from '../../processor/processor-ledger.ts';
import type { OpsLedgerResult, OpsLedgerRow } from './ledger.types.ts';
import { chargesOfPayment, judgeLedgerVerdict, summariseCharges } from './ledger-verdict.ts';
import type { OpsListInput } from './list.types.ts';
import { latestPaymentsOf } from './payments.ts';

/**
 * The tenant's latest payments next to the processor's ledger: how many successful charges
 * the processor holds for each, with which PaymentIntent and amount, and a verdict. The
 * ledger is read over the processor's admin API; if that fails, the app side is still
 * answered (`processor: 'unreachable'`, every verdict `unverified`) rather than an error,
 * because an operator needs the cockpit most when the processor is in trouble.
 *
 * @example
 * const result = await compareWithProcessorLedger({
 *   ctx: { db, tenantId: 'tenant_a', processorLedger, clock: systemClock },
 *   input: { limit: 50 },
 * });
 * result.rows.filter((row) => row.verdict === 'double_charge');
 */
export async function compareWithProcessorLedger({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string; processorLedger: ProcessorLedger; clock: Clock };
  input: OpsListInput;
}): Promise<OpsLedgerResult> {
  const [tenant] = await ctx.db
    .select({ processorAccountId: tenants.processorAccountId })
    .from(tenants)
    .where(eq(tenants.id, ctx.tenantId))
    .limit(1);
  const accountId = tenant?.processorAccountId ?? null;
  // App first, ledger second: a charge that lands in between then shows as `app_behind`
  // (true at that instant). The other order would show a payment that succeeded in between
  // as `succeeded_without_charge`, a false alarm.
  const rows = await latestPaymentsOf(ctx.db, ctx.tenantId, input.limit);

  let charges: LedgerCharge[] | null = null;
  let processorError: string | null = null;
  if (accountId) {
    try {
      charges = await ctx.processorLedger.chargesOf(accountId);
    } catch (error) {
      if (!(error instanceof ProcessorUnreachableError)) throw error;
      processorError = error.message;
    }
  } else {
    processorError = 'the tenant has no processor account';
  }

  return {
    processor: charges ? 'reachable' : accountId ? 'unreachable' : 'no_account',
    processorAccountId: accountId,
    processorError,
    checkedAt: ctx.clock.now().toISOString(),
    rows: rows.map((row): OpsLedgerRow => {
      const facts = {
        tenantId: row.tenantId,
        paymentId: row.id,
        status: row.status,
        amount: row.amount,
        currency: row.currency,
        downstreamKey: row.downstreamKey,
        processorPaymentIntentId: row.processorPaymentIntentId,
      };
      const base = {
        paymentId: row.id,
        appStatus: row.status,
        appAmount: row.amount,
        appCurrency: row.currency,
        appPaymentIntentId: row.processorPaymentIntentId,
        downstreamKey: row.downstreamKey,
        createdAt: row.createdAt.toISOString(),
      };
      if (!charges) {
        return {
          ...base,
          processor: null,
          verdict: 'unverified',
          reason: processorError ?? 'processor not asked',
        };
      }
      const side = summariseCharges(chargesOfPayment(facts, charges));
      return { ...base, processor: side, ...judgeLedgerVerdict(facts, side) };
    }),
  };
}
