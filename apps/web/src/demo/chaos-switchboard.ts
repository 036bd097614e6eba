import {
  PROCESSOR_FAULT_SWITCHES,
  type ProcessorFaultSwitchName,
} from './processor-fault-switches.ts';

/**
 * The demo's chaos switches, shared by the web process (which presses them) and the launcher
 * (which works them on real processes). One name per action across the demo and the chaos
 * nemesis; the cockpit shows them in this order.
 */
export const LAUNCHER_SWITCHES = [
  'kill_worker',
  'pause_worker',
  'kill_web',
  'pg_crash_restart',
  'db_failover',
] as const;
export type LauncherSwitchName = (typeof LAUNCHER_SWITCHES)[number];
export const isLauncherSwitch = (name: string): name is LauncherSwitchName =>
  (LAUNCHER_SWITCHES as readonly string[]).includes(name);

export const CHAOS_SWITCHES = [
  ...LAUNCHER_SWITCHES,
  'drop_next_response',
  ...PROCESSOR_FAULT_SWITCHES,
] as const;
export type ChaosSwitchName = (typeof CHAOS_SWITCHES)[number];

/**
 * The least time between two presses of one switch: a script pressing "kill a worker" in a loop
 * would keep the system down. Process switches count system-wide, the others per merchant; the
 * launcher keeps its own count too (a restarted web process forgets its own).
 */
export const CHAOS_PRESS_COOLDOWN_MS: Record<ChaosSwitchName, number> = {
  kill_worker: 10_000,
  pause_worker: 10_000,
  kill_web: 30_000,
  pg_crash_restart: 30_000,
  // A failover and the old primary's rejoin take about half of it.
  db_failover: 60_000,
  drop_next_response: 2_000,
  // Each processor fault switch arms one fault for the next call only.
  ...(Object.fromEntries(PROCESSOR_FAULT_SWITCHES.map((name) => [name, 2_000])) as Record<
    ProcessorFaultSwitchName,
    number
  >),
};

export { PressCooldown } from './press-cooldown.ts';
export { PROCESSOR_FAULT_SWITCHES, type ProcessorFaultSwitchName };

export interface ChaosPart {
  name: string;
  state: 'up' | 'restarting' | 'paused' | 'down';
  pid?: number;
  restarts: number;
  /** While paused: when it is resumed (ISO). */
  resumesAt?: string;
  /** A database cluster's node (`--ha`): primary, synchronous standby or standby. */
  role?: string;
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
    /** The call it hit (`payment_intents.confirm`, `refunds.create`, `webhooks.deliver`). */
    operation: string;
    /** The payment intent (`pi_`), refund (`re_`) or, for a webhook fault, event (`evt_`) it hit. */
    processorObject: string | null;
  } | null;
}

/** A switch could not act (nothing to kill, launcher or processor not answering). */
export class ChaosSwitchError extends Error {
  override readonly name = 'ChaosSwitchError';
}

/** The launcher refused a press as too soon (its count outlives a web restart); nothing was done. */
export class ChaosSwitchRateLimited extends ChaosSwitchError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** What the web process can do to the system (over HTTP, or a test's fake). */
export interface ChaosSwitchboard {
  parts(): Promise<ChaosPart[]>;
  /** The launcher switches it works (`db_failover` only on a replicated cluster); unset: all. */
  launcherSwitches?(): Promise<readonly LauncherSwitchName[]>;
  /** Resolves with what it did, in words; `target` is the worker known to be charging, if any. */
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
