import { groupBy } from './group.ts';
import type { History } from './history.ts';
import type { NemesisPlan } from './schedule.ts';
import {
  type ChaosTarget,
  type DatabaseCrash,
  FAILOVER_FAULT_KINDS,
  type FailoverFaultKind,
  isArmedFault,
} from './target.ts';

/** How long a worker woken from a pause acts undisturbed before its lane's next fault. */
const WOKEN_WORKER_GRACE_MS = 5_000;

const PROCESS_OF: Record<string, string> = {
  kill_web: 'web',
  kill_processor: 'processor',
};

/**
 * Runs the schedule and records each fault's start and end (or its error: not fired), one lane
 * per thing a fault hits, so a slow restart holds back no fault aimed elsewhere.
 */
export async function runNemesis(
  events: readonly NemesisPlan[],
  target: ChaosTarget,
  history: History,
  options: { sleep: (ms: number) => Promise<void>; faultsStartAt: number },
): Promise<void> {
  let crashes = 0;
  const nextCrash = (): DatabaseCrash =>
    crashes++ % 2 === 0 ? 'immediate_shutdown' : 'kill_postmaster';
  const lane = async (laneEvents: readonly NemesisPlan[]) => {
    let previous: NemesisPlan | undefined;
    for (const event of laneEvents) {
      // A fault that fell due while this worker was stopped waits until the woken worker
      // has acted on what it read before the stop: that is the interleaving a pause is
      // for, and a kill right at SIGCONT would erase it.
      const afterPause = previous?.kind === 'pause_worker' ? WOKEN_WORKER_GRACE_MS : 0;
      const wait = Math.max(options.faultsStartAt + event.atMs - history.elapsed(), afterPause);
      previous = event;
      if (wait > 0) await options.sleep(wait);
      try {
        await inject(event, target, history, options.sleep, nextCrash);
      } catch (error) {
        const detail = `not injected: ${(error as Error).message.split('\n')[0]}`;
        history.nemesis({
          phase: 'end',
          id: event.id,
          kind: event.kind,
          target: event.target,
          detail,
        });
      }
    }
  };
  await Promise.all([...groupBy(events, laneOf).values()].map(lane));
}

/** What a fault hits: faults on the same thing run one after another. */
function laneOf(event: NemesisPlan): string {
  if (isArmedFault(event.kind)) return 'processor-faults';
  if (event.kind.startsWith('pg_')) return 'postgres';
  return PROCESS_OF[event.kind] ?? event.target;
}

async function inject(
  event: NemesisPlan,
  target: ChaosTarget,
  history: History,
  sleep: (ms: number) => Promise<void>,
  nextCrash: () => DatabaseCrash,
): Promise<void> {
  // `bit` and `faultId` on the end say how much a fault did; coverage reads them.
  const record = (
    phase: 'start' | 'end',
    processName: string,
    detail?: string,
    effect?: { bit?: number; faultId?: string },
  ) =>
    history.nemesis({
      phase,
      id: event.id,
      kind: event.kind,
      target: processName,
      detail,
      ...effect,
    });

  if (event.kind === 'kill_worker' || event.kind in PROCESS_OF) {
    const name = PROCESS_OF[event.kind] ?? event.target;
    record('start', name, 'SIGKILL');
    await target.kill(name);
    history.lifecycle({ process: name, event: 'killed' });
    await sleep(event.downMs);
    await target.restart(name);
    history.lifecycle({ process: name, event: 'restarted' });
    record('end', name, `down ${event.downMs} ms, restarted`);
    return;
  }
  if (event.kind === 'pause_worker') {
    const stopped = await target.pause(event.target, { atNextClaim: true });
    if (!stopped) throw new Error(`${event.target} is down or already stopped`);
    const worker = stopped.worker;
    record(
      'start',
      worker,
      stopped.job ? `SIGSTOP inside ${stopped.job}, before its processor call` : 'SIGSTOP',
    );
    history.lifecycle({ process: worker, event: 'stopped' });
    await sleep(event.downMs);
    await target.resume(worker);
    history.lifecycle({ process: worker, event: 'resumed' });
    // Inside a job or not (a worker stopped while idle proves little): coverage counts them.
    const detail = `SIGCONT after ${event.downMs} ms (past the ${target.leaseMs} ms lease)`;
    record('end', worker, detail, { bit: stopped.job ? 1 : 0 });
    return;
  }
  if (event.kind === 'pg_crash_restart') {
    // Every other crash is SIGKILL of the postmaster alone (the OOM killer), not an immediate
    // shutdown: its wrapper must notice by itself that its server is gone.
    const how = nextCrash();
    record(
      'start',
      'postgres',
      how === 'kill_postmaster' ? 'SIGKILL of the postmaster alone' : 'immediate shutdown',
    );
    await target.crashRestartDatabase(how);
    history.lifecycle({ process: 'postgres', event: 'restarted' });
    record('end', 'postgres', 'restarted after crash recovery');
    return;
  }
  if (event.kind === 'pg_terminate_storm') {
    record('start', 'postgres', `${event.rounds} rounds of pg_terminate_backend`);
    let terminated = 0;
    for (let i = 0; i < event.rounds; i++) {
      terminated += await target.terminateBackends();
      await sleep(150);
    }
    // A storm that terminated nobody did not fire.
    record('end', 'postgres', `${terminated} backends terminated`, { bit: terminated });
    return;
  }
  if ((FAILOVER_FAULT_KINDS as readonly string[]).includes(event.kind)) {
    if (!target.failDatabaseOver)
      throw new Error(`${event.kind}: the target has no replicated database`);
    record('start', 'postgres', event.kind);
    const { detail, bit } = await target.failDatabaseOver(
      event.kind as FailoverFaultKind,
      event.downMs,
    );
    // A cancel that found no COMMIT waiting did not fire.
    record('end', 'postgres', detail, { bit });
    return;
  }
  if (isArmedFault(event.kind)) {
    record('start', 'processor', `armed x${event.count} for ${event.target}`);
    const faultId = await target.armProcessorFault(event);
    // Armed is not fired: coverage counts it once the processor reports it bit (faultId).
    record('end', 'processor', `armed ${faultId ?? ''}`.trim(), { faultId });
    return;
  }
  throw new Error(`no injector for ${event.kind}`);
}
