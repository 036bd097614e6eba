import type { Database } from '@once/api';
import { isTransientDatabaseError } from '@once/postgres';
import {
  CHAOS_SWITCHES,
  type ChaosPart,
  type ChaosSwitchboard,
  type ChaosSwitchName,
  isLauncherSwitch,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
} from './chaos-switchboard.ts';
import { type ProcessorFaultStatus, processorFaultStatus } from './processor-fault-status.ts';

/**
 * `ops.chaosStatus`. `enabled: false` (no switches, no parts) unless the launcher enabled the
 * switches; a normal deployment answers that, never an error, so the cockpit stays quiet.
 */
export type ChaosStatusResult =
  | { enabled: false }
  | {
      enabled: true;
      /**
       * Whether this caller may press them: a session the operator code signed in. An API key
       * (or a session it opened) sees the parts but presses nothing (`operator_code_required`).
       */
      pressable: boolean;
      switches: readonly ChaosSwitchName[];
      /** The parts and their state; empty with `launcherError` when the launcher did not answer. */
      parts: ChaosPart[];
      launcherError: string | null;
      /** Each processor fault switch: armed, and the payment it last hit. */
      processorFaults: ProcessorFaultStatus[];
      /** Empty `processorFaults` with this when the processor did not answer. */
      processorError: string | null;
      checkedAt: string;
    };

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
// The database's errors are not shown as they come: Drizzle's message is the failed SQL.
const faultsErrorOf = (error: unknown) =>
  isTransientDatabaseError(error) ? 'the database is not answering' : messageOf(error);

/**
 * How long the status waits for the database's part (which payment each fault hit). A database
 * that is down or failing over may take the pool's connect timeout (10 s) to fail; the parts,
 * which show exactly that, must not wait for it.
 */
const CHAOS_STATUS_DATABASE_DEADLINE_MS = 2_000;

/** `promise`, or a rejection naming `what` once `ms` have passed without an answer. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Whether the demo's chaos switches are on, which ones work here, every part's state from the
 * launcher and each processor fault switch's state for the tenant. The launcher and the
 * processor are asked at once; one not answering (or a slow database) blanks only its part.
 */
export async function chaosStatus({
  ctx,
}: {
  ctx: {
    chaos?: ChaosSwitchboard;
    clock: { now(): Date };
    db: Database;
    tenantId: string;
    operatorCodeProven: boolean;
  };
}): Promise<ChaosStatusResult> {
  const { chaos } = ctx;
  if (!chaos) return { enabled: false };
  const [parts, faults, launcherSwitches] = await Promise.allSettled([
    chaos.parts(),
    within(
      processorFaultStatus(ctx.db, chaos, ctx.tenantId),
      CHAOS_STATUS_DATABASE_DEADLINE_MS,
      'the database',
    ),
    chaos.launcherSwitches?.() ?? LAUNCHER_SWITCHES,
  ]);
  // A launcher that does not answer works no switch now (its error is shown with the parts).
  const worked: readonly LauncherSwitchName[] =
    launcherSwitches.status === 'fulfilled' ? launcherSwitches.value : [];
  return {
    enabled: true,
    pressable: ctx.operatorCodeProven,
    switches: CHAOS_SWITCHES.filter((name) => !isLauncherSwitch(name) || worked.includes(name)),
    parts: parts.status === 'fulfilled' ? parts.value : ([] as ChaosPart[]),
    launcherError: parts.status === 'rejected' ? messageOf(parts.reason) : null,
    processorFaults: faults.status === 'fulfilled' ? faults.value : ([] as ProcessorFaultStatus[]),
    processorError: faults.status === 'rejected' ? faultsErrorOf(faults.reason) : null,
    checkedAt: ctx.clock.now().toISOString(),
  };
}
