import { askProcessorAdmin, type ProcessorAdminApi } from './admin-api.ts';
import {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
} from './processor-ledger.ts';

interface AdminLedgerEntry {
  seq: number;
  kind: string;
  payment_intent: string;
  charge: string | null;
  amount: number;
  currency: string;
  idempotency_key: string | null;
  metadata: Record<string, string> | null;
  created: string;
}

/** Reads the ledger over the processor's admin API (`GET /admin/ledger?account=&kind=charge`). */
export function createHttpProcessorLedger(
  options: ProcessorAdminApi & {
    /** Whole-request bound (connect + answer + body); default 2 000 ms. */
    timeoutMs?: number;
  },
): ProcessorLedger {
  return {
    async chargesOf(account) {
      const query = new URLSearchParams({ account, kind: 'charge' });
      const { body } = await askProcessorAdmin(
        options,
        'processor ledger',
        `/admin/ledger?${query}`,
        {
          timeoutMs: options.timeoutMs ?? 2_000,
        },
      );
      const data = (body as { data?: AdminLedgerEntry[] }).data;
      if (!Array.isArray(data)) {
        throw new ProcessorUnreachableError('processor ledger answered without a data array');
      }
      return data
        .filter((entry) => entry.kind === 'charge')
        .map(
          (entry): LedgerCharge => ({
            seq: entry.seq,
            paymentIntentId: entry.payment_intent,
            chargeId: entry.charge,
            amount: entry.amount,
            currency: entry.currency,
            idempotencyKey: entry.idempotency_key,
            metadata: entry.metadata ?? {},
            createdAt: entry.created,
          }),
        );
    },
  };
}
