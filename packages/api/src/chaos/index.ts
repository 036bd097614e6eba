// @once/api/chaos-switchboard: the demo's chaos switches (names, cooldowns, the switchboard the
// ops router presses). The web app implements the switchboard (apps/web/src/demo).

export {
  CHAOS_DROP_COOKIE_NAME,
  CHAOS_PRESS_COOLDOWN_MS,
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
  ChaosSwitchError,
  type ChaosSwitchName,
  ChaosSwitchRateLimited,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
  PROCESSOR_FAULT_SWITCHES,
  PressCooldown,
  type ProcessorFaultState,
  type ProcessorFaultSwitchName,
} from './chaos-switchboard.ts';
export type { ProcessorFaultStatus } from './processor-fault-status.ts';
export {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_TARGETS,
  type ProcessorFaultTargetName,
  processorFaultOperation,
} from './processor-fault-switches.ts';
