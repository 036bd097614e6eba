// @once/web/demo: the demo's chaos switches as the launcher (scripts/system) and the tests
// outside the app see them: the switch names, their cooldowns, the parts' states, and which
// processor fault each processor switch arms.

export {
  CHAOS_PRESS_COOLDOWN_MS,
  type ChaosPart,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
  PressCooldown,
} from './chaos-switchboard.ts';
export {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_SWITCHES,
  PROCESSOR_FAULT_TARGETS,
  type ProcessorFaultSwitchName,
} from './processor-fault-switches.ts';
