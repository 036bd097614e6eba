/**
 * The demo's chaos switches as the API sees them. A switchboard exists only when the launcher
 * enabled the switches (`npm run demo`); without one, `ops.chaosStatus` answers
 * `{ enabled: false }` and `ops.chaosPress` refuses with `chaos_switches_disabled`.
 */

/**
 * Switches the launcher works on real processes. One name per action across the demo and the
 * chaos nemesis (e2e/chaos): `pg_crash_restart` is a crash (SIGKILL) and a restart on the same data.
 */
export const LAUNCHER_SWITCHES = [
  'kill_worker',
  'kill_web',
  'pause_worker',
  'pg_crash_restart',
] as const;
export type LauncherSwitchName = (typeof LAUNCHER_SWITCHES)[number];

/**
 * The processor's faults, armed once (count 1) for the caller's processor account: one
 * `processor_<kind>` per processor fault kind but those named not offered in
 * processor-fault-switches.test.ts (which holds this list to the processor's own).
 */
export const PROCESSOR_FAULT_SWITCHES = [
  'processor_fail_before_charge',
  'processor_charge_then_drop',
  'processor_delay',
  'processor_fail_after_charge',
  'processor_slow_webhook',
  'processor_duplicate_webhook',
  'processor_rate_limit',
  'processor_lock_timeout',
] as const;
export type ProcessorFaultSwitchName = (typeof PROCESSOR_FAULT_SWITCHES)[number];

/** Every switch, in the order the cockpit shows them. */
export const CHAOS_SWITCHES = [
  ...LAUNCHER_SWITCHES,
  'drop_next_response',
  ...PROCESSOR_FAULT_SWITCHES,
] as const;
export type ChaosSwitchName = (typeof CHAOS_SWITCHES)[number];

/**
 * The least time between two presses of one switch. A presenter presses each switch once per
 * scene; a script pressing "kill a worker" in a loop would keep the system down (and before
 * presses were told apart from crashes, stopped the whole demo as a crash loop). Process
 * switches are counted for the whole system, the others per merchant. The launcher keeps its
 * own count of its switches (a restarted web process forgets its own), and a pause there also
 * waits until the paused worker has run as long as it was stopped.
 */
export const CHAOS_PRESS_COOLDOWN_MS: Record<ChaosSwitchName, number> = {
  kill_worker: 10_000,
  pause_worker: 10_000,
  kill_web: 30_000,
  pg_crash_restart: 30_000,
  drop_next_response: 2_000,
  processor_fail_before_charge: 2_000,
  processor_charge_then_drop: 2_000,
  processor_delay: 2_000,
  processor_fail_after_charge: 2_000,
  processor_slow_webhook: 2_000,
  processor_duplicate_webhook: 2_000,
  processor_rate_limit: 2_000,
  processor_lock_timeout: 2_000,
};

export { PressCooldown } from './press-cooldown.ts';

/** One part of the running system, as the launcher sees it. */
export interface ChaosPart {
  name: string;
  state: 'up' | 'restarting' | 'paused' | 'down';
  pid?: number;
  restarts: number;
  /** While paused: when it is resumed (ISO). */
  resumesAt?: string;
}

/** What the processor reports of one processor fault switch's faults on one account. */
export interface ProcessorFaultState {
  switch: ProcessorFaultSwitchName;
  /** A fault of its kind is armed and waiting for the call it hits. */
  armed: boolean;
  /** The newest time one of its kind bit; null: none has. */
  lastUse: {
    /** The processor database's clock (ISO). */
    at: string;
    /** The call it hit (`payment_intents.confirm`, `webhooks.deliver`). */
    operation: string;
    /** The payment intent (`pi_`) or, for a webhook fault, the event (`evt_`) it hit. */
    processorObject: string | null;
  } | null;
}

/** A switch could not act (nothing to kill, launcher or processor not answering). */
export class ChaosSwitchError extends Error {
  override readonly name = 'ChaosSwitchError';
}

/**
 * The launcher refused a press as too soon (its own count, which outlives a web restart):
 * nothing was done; try again after `retryAfterSeconds`.
 */
export class ChaosSwitchRateLimited extends ChaosSwitchError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/**
 * What the web process can do to the system. Implemented over HTTP by
 * the web app's `createHttpChaosSwitchboard` (apps/web/src/demo); tests may pass a fake.
 */
export interface ChaosSwitchboard {
  /** Every part and its state, from the launcher. */
  parts(): Promise<ChaosPart[]>;
  /**
   * Presses a launcher switch; resolves with what it did, in words. `target` names the
   * worker to act on (kill, pause) when one is known to be charging; else the launcher picks.
   */
  pressLauncherSwitch(name: LauncherSwitchName, target?: string): Promise<string>;
  /** Arms one processor fault for `account`; resolves with what it armed, in words. */
  armProcessorFault(account: string, name: ProcessorFaultSwitchName): Promise<string>;
  /** Each processor fault switch's state on `account`: armed, and its newest use. */
  processorFaults(account: string): Promise<ProcessorFaultState[]>;
  /** Marks the browser carrying `token` (a cookie) so its next `checkout.pay` answer is dropped. */
  armDropNextResponse(token: string): void;
}

/** Cookie naming the browser whose next `checkout.pay` answer the web process drops. */
export const CHAOS_DROP_COOKIE_NAME = 'once_chaos_drop';
