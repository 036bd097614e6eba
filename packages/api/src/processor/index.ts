// @once/api/processor-ledger: the processor's ledger as `ops.ledger` reads it, and its HTTP client.

export { createHttpProcessorLedger } from './http-processor-admin.ts';
export type { LedgerCharge } from './processor-admin.ts';
