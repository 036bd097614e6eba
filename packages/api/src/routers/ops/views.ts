// @once/api/ops: what the operators' procedures answer, for the cockpit's components.

export type {
  LedgerVerdict,
  LedgerVerdictSeverity,
  OpsLedgerResult,
  OpsLedgerRow,
} from './ledger.types.ts';
