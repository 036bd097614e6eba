import {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
} from './processor-ledger.ts';

export interface HttpProcessorLedgerOptions {
  /** Base URL of the processor, e.g. `http://127.0.0.1:4100` (PROCESSOR_URL). */
  url: string;
  /** `X-Admin-Token` of the processor's admin API (PROCESSOR_ADMIN_TOKEN). */
  adminToken: string;
  /** Whole-request bound (connect + answer + body); default 2 000 ms. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

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

/**
 * Reads the ledger over the processor's admin API (`GET /admin/ledger?account=&kind=charge`),
 * real HTTP with a timeout, so a hung processor costs the cockpit at most `timeoutMs`.
 *
 * @example
 * const ledger = createHttpProcessorLedger({ url: 'http://127.0.0.1:4100', adminToken: 'once-admin' });
 * const charges = await ledger.chargesOf('acct_tenant_a');
 */
export function createHttpProcessorLedger(options: HttpProcessorLedgerOptions): ProcessorLedger {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const doFetch = options.fetch ?? fetch;
  return {
    async chargesOf(account) {
      const url = new URL('/admin/ledger', options.url);
      url.searchParams.set('account', account);
      url.searchParams.set('kind', 'charge');
      let body: { data?: AdminLedgerEntry[] };
      try {
        const response = await doFetch(url, {
          headers: { 'x-admin-token': options.adminToken, accept: 'application/json' },
          signal: AbortSignal.timeout(timeoutMs),
        });
        if (!response.ok) {
          throw new ProcessorUnreachableError(`processor ledger answered ${response.status}`);
        }
        body = (await response.json()) as { data?: AdminLedgerEntry[] };
      } catch (error) {
        if (error instanceof ProcessorUnreachableError) throw error;
        const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        throw new ProcessorUnreachableError(`processor ledger not reachable (${reason})`, {
          cause: error,
        });
      }
      if (!Array.isArray(body.data)) {
        throw new ProcessorUnreachableError('processor ledger answered without a data array');
      }
      return body.data
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
