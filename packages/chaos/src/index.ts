export { type ConformanceInput, checkConformance, type Preset } from './conformance.ts';
export {
  DEFAULT_FAULT_MIX,
  FAULT_KINDS,
  type FaultKind,
  type FaultMix,
  type FaultProxy,
  type FaultProxyOptions,
  startFaultProxy,
} from './fault-proxy.ts';
export type { HistoryEvent, UpstreamAttempt } from './history.ts';
export { type LedgerCharge, type LedgerReader, onceProcessorLedger, sqlLedger } from './ledger.ts';
export { type LoadOptions, type LoadResult, runLoad } from './load-clients.ts';
export { type ProbeAnswer, type ProbeName, probeIetf } from './probes.ts';
export { junitReport, markdownReport } from './report.ts';
export { type ChaosRunOptions, type ChaosRunResult, runChaos } from './run-chaos.ts';
export { VIOLATIONS, type Violation, type ViolationName } from './violations.ts';
