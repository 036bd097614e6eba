// @once/api/processor-ledger: the processor's ledger as `ops.ledger` reads it, and its HTTP client.

export { createHttpProcessorLedger } from './http-processor-ledger.ts';
export type { LedgerCharge } from './processor-ledger.ts';
