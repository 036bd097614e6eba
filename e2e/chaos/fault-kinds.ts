/**
 * Every fault the nemesis knows. A `ci` run must fire each of these at least once: a
 * nemesis that never bites proves nothing.
 */
export const FAULT_KINDS = [
  'kill_web',
  'kill_worker',
  'kill_processor',
  'pause_worker',
  'pg_crash_restart',
  'pg_terminate_storm',
  'fail_before_charge',
  'fail_after_charge',
  'charge_then_drop',
  'delay',
  'duplicate_webhook',
  'slow_webhook',
  'not_found',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults the processor injects itself (armed over its admin API). */
export const PROCESSOR_FAULT_KINDS: readonly FaultKind[] = [
  'fail_before_charge',
  'fail_after_charge',
  'charge_then_drop',
  'delay',
  'duplicate_webhook',
  'slow_webhook',
  'not_found',
];

export const isFaultKind = (kind: string): kind is FaultKind =>
  (FAULT_KINDS as readonly string[]).includes(kind);
