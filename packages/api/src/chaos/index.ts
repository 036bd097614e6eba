// @once/api/chaos-switchboard: the demo's chaos switches (names, cooldowns, the switchboard the
// ops router presses) and the web process's HTTP client for the launcher's control channel.

export {
  CHAOS_DROP_COOKIE_NAME,
  CHAOS_PRESS_COOLDOWN_MS,
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
  ChaosSwitchError,
  type ChaosSwitchName,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
  PROCESSOR_FAULT_SWITCHES,
  PressCooldown,
} from './chaos-switchboard.ts';
export { createHttpChaosSwitchboard } from './http-chaos-switchboard.ts';
