// Black-box mode: a fault proxy in front of any API that takes Idempotency-Key.
export { type BlackBoxOptions, type BlackBoxResult, runBlackBox } from './black-box.ts';
// A target's run: the engine, schedule and checks; `target.ts` is the seam a team implements.
export { checkHistory, type IntentFacts } from './checker.ts';
export type { Preset } from './conformance.ts';
export { achieved, measureCoverage, shortfalls } from './coverage.ts';
export { type ChaosRunResult, runBrowserLanes, runChaos } from './engine.ts';
export { RETURNING_OPERATOR } from './failover-checks.ts';
export { startFaultProxy } from './fault-proxy.ts';
export { type ClientEvent, History } from './history.ts';
export { type LedgerReader, onceProcessorLedger, sqlLedger } from './ledger.ts';
export { junitReport, markdownReport } from './report.ts';
export {
  type ChaosProfile,
  type CoverageFloors,
  type IntentPlan,
  type NemesisPlan,
  paymentMethodOf,
  planRun,
  type TenantCatalogue,
} from './schedule.ts';
export {
  type AppPayment,
  type AppRefund,
  type BackstageEvent,
  type ChaosClients,
  type ChaosTarget,
  type ClientContext,
  controlPart,
  type DatabaseCrash,
  FAILOVER_FAULT_KINDS,
  type FailoverFaultKind,
  type FailoverRecord,
  type LedgerEntry,
  type LostRow,
  type Part,
  type Snapshot,
  SYSTEM_FAULT_KINDS,
} from './target.ts';
export { VIOLATIONS, type Violation, type ViolationKind } from './violations.ts';
