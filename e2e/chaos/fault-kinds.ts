import {
  FAULT_KINDS as PROCESSOR_FAULTS,
  type FaultKind as ProcessorFaultKind,
} from '@once/processor/fault-kinds';

/** Faults the chaos target injects on the system's own processes and its database. */
const SYSTEM_FAULT_KINDS = [
  'kill_web',
  'kill_worker',
  'kill_processor',
  'pause_worker',
  'pg_crash_restart',
  'pg_terminate_storm',
] as const;

/** Faults the processor injects itself (armed over its admin API): its own list. */
export const PROCESSOR_FAULT_KINDS = PROCESSOR_FAULTS;

/**
 * Every fault the nemesis knows. A `ci` run must fire each of these at least once: a
 * nemesis that never bites proves nothing. The order is the schedule's draw order.
 */
export const FAULT_KINDS = [...SYSTEM_FAULT_KINDS, ...PROCESSOR_FAULT_KINDS] as const;

/**
 * Faults on a replicated cluster (the `failover` profile): the primary killed -9 (then
 * rewound and rejoined), partitioned then stopped (then resumed: it demotes and rewinds), a
 * planned switchover, and COMMITs cancelled while they wait for the synchronous standby.
 */
export const FAILOVER_FAULT_KINDS = [
  'pg_kill_primary',
  'pg_stop_primary',
  'pg_switchover',
  'pg_sync_cancel',
] as const;
export type FailoverFaultKind = (typeof FAILOVER_FAULT_KINDS)[number];

export type FaultKind = (typeof FAULT_KINDS)[number] | FailoverFaultKind;

export const isFaultKind = (kind: string): kind is FaultKind =>
  (FAULT_KINDS as readonly string[]).includes(kind) || isFailoverFaultKind(kind);
export const isFailoverFaultKind = (kind: string): kind is FailoverFaultKind =>
  (FAILOVER_FAULT_KINDS as readonly string[]).includes(kind);
export const isProcessorFaultKind = (kind: string): kind is ProcessorFaultKind =>
  (PROCESSOR_FAULT_KINDS as readonly string[]).includes(kind);
