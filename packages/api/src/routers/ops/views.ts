// @once/api/ops: what the operators' procedures answer, for the cockpit's components.

export type { ChaosPressResult, ChaosStatusResult } from './chaos.types.ts';
export type {
  LedgerVerdict,
  LedgerVerdictSeverity,
  OpsLedgerResult,
  OpsLedgerRow,
} from './ledger.types.ts';
