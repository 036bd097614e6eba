import {
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
} from '../../chaos/chaos-switchboard.ts';
import type { Clock } from '../../clock.ts';
import type { ChaosStatusResult } from './chaos.types.ts';

/**
 * Whether the demo's chaos switches are on, which there are, and every part's state (up,
 * restarting, paused, down) from the launcher, so the audience sees the system recover.
 *
 * @example
 * const status = await chaosStatus({ ctx: { chaos, clock: systemClock } });
 * if (status.enabled) status.parts.find((p) => p.name === 'worker-1')?.state; // 'restarting'
 */
export async function chaosStatus({
  ctx,
}: {
  ctx: { chaos?: ChaosSwitchboard; clock: Clock };
}): Promise<ChaosStatusResult> {
  if (!ctx.chaos) return { enabled: false };
  let parts: ChaosPart[] = [];
  let launcherError: string | null = null;
  try {
    parts = await ctx.chaos.parts();
  } catch (error) {
    launcherError = error instanceof Error ? error.message : String(error);
  }
  return {
    enabled: true,
    switches: CHAOS_SWITCHES,
    parts,
    launcherError,
    checkedAt: ctx.clock.now().toISOString(),
  };
}
