import {
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
} from '../../chaos/chaos-switchboard.ts';
import {
  type ProcessorFaultStatus,
  processorFaultStatus,
} from '../../chaos/processor-fault-status.ts';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../database.ts';
import type { ChaosStatusResult } from './chaos.types.ts';

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const isLauncherSwitch = (name: string): name is LauncherSwitchName =>
  (LAUNCHER_SWITCHES as readonly string[]).includes(name);

/**
 * Whether the demo's chaos switches are on, which there are (of the launcher's, those it works:
 * a failover only on a replicated cluster), every part's state (up,
 * restarting, paused, down) from the launcher, so the audience sees the system recover, and
 * each processor fault switch's state for the tenant: armed, and which payment it last hit.
 * The launcher and the processor are asked at once; one not answering blanks only its part.
 *
 * @example
 * const status = await chaosStatus({ ctx: { chaos, clock: systemClock, db, tenantId } });
 * if (status.enabled) status.parts.find((p) => p.name === 'worker-1')?.state; // 'restarting'
 */
export async function chaosStatus({
  ctx,
}: {
  ctx: { chaos?: ChaosSwitchboard; clock: Clock; db: Database; tenantId: string };
}): Promise<ChaosStatusResult> {
  const { chaos } = ctx;
  if (!chaos) return { enabled: false };
  const [parts, faults, launcherSwitches] = await Promise.allSettled([
    chaos.parts(),
    processorFaultStatus(ctx.db, chaos, ctx.tenantId),
    chaos.launcherSwitches?.() ?? LAUNCHER_SWITCHES,
  ]);
  // A launcher that does not answer works no switch now (its error is shown with the parts).
  const worked: readonly LauncherSwitchName[] =
    launcherSwitches.status === 'fulfilled' ? launcherSwitches.value : [];
  return {
    enabled: true,
    switches: CHAOS_SWITCHES.filter((name) => !isLauncherSwitch(name) || worked.includes(name)),
    parts: parts.status === 'fulfilled' ? parts.value : ([] as ChaosPart[]),
    launcherError: parts.status === 'rejected' ? messageOf(parts.reason) : null,
    processorFaults: faults.status === 'fulfilled' ? faults.value : ([] as ProcessorFaultStatus[]),
    processorError: faults.status === 'rejected' ? messageOf(faults.reason) : null,
    checkedAt: ctx.clock.now().toISOString(),
  };
}
