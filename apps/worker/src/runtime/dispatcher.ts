import { setTimeout as sleep } from 'node:timers/promises';
import { schema } from '@once/db';
import { type ClaimedJob, msUntilNextClaimable } from '@once/db/outbox';
import { isTransientDatabaseError } from '@once/postgres';
import type postgres from 'postgres';
import { runJob } from '../jobs/job-handlers.ts';
import type { JobDeps } from '../jobs/processor-action-job.ts';
import { claimJobs } from './claim-jobs.ts';
import { withDatabaseRetry } from './transient-database-error.ts';

/** `sql` also gives the dispatcher its LISTEN connection (postgres.js reserves one from the pool). */
export interface DispatcherOptions extends JobDeps {
  workerId: string;
  /** Jobs charged at the same time by this process. */
  concurrency: number;
  /** Fallback poll when no notification arrives (a NOTIFY lost while reconnecting). */
  pollIntervalMs: number;
  /**
   * LISTEN for new jobs (default true). False on engines or poolers without LISTEN/NOTIFY
   * (CockroachDB, PgBouncer in transaction mode): the poll alone finds every job, each within
   * `pollIntervalMs`.
   */
  listen?: boolean;
}

export interface Dispatcher {
  /** Stops claiming, waits up to `graceMs` for in-flight charges, then stops listening. */
  stop(graceMs: number): Promise<void>;
  /** Charges currently in flight (for /healthz). */
  inFlight(): number;
}

/**
 * The outbox dispatcher: claim due jobs, run each with the handler of its kind, repeat. It sleeps until a NOTIFY
 * on the outbox channel, a finished job frees a slot, the next `run_after` or lease end
 * comes due, or the fallback poll fires, whichever is first. Database errors never end
 * the loop: it logs, backs off and claims again (postgres.js reconnects by itself).
 */
export function startDispatcher(options: DispatcherOptions): Dispatcher {
  const { sql, log } = options;
  const running = new Set<Promise<void>>();
  let stopping = false;
  let wakeRequested = false;
  let wakeSleeper: () => void = () => {};
  const wake = () => {
    wakeRequested = true;
    wakeSleeper();
  };

  let listener =
    options.listen === false
      ? Promise.resolve(null)
      : listenForNewJobs(options, wake, () => stopping);
  // Set when a claim met a broken connection (a failover, a restart): postgres.js re-LISTENs
  // on its own after its LISTEN connection closes, but only once and right away, and a
  // failure of that attempt is swallowed, so after an outage the dispatcher subscribes again.
  let lostConnection = false;
  const loop = claimLoop();

  async function resubscribe(): Promise<void> {
    const previous = listener;
    listener = previous.then(async (meta) => {
      await meta?.unlisten().catch(() => {});
      log('listen.resubscribing', {});
      return listenForNewJobs(options, wake, () => stopping);
    });
    await listener;
  }

  async function claimLoop(): Promise<void> {
    while (!stopping) {
      const free = options.concurrency - running.size;
      let mayHaveMore = false;
      if (free > 0) {
        try {
          const jobs = await withDatabaseRetry(
            () =>
              claimJobs(sql, {
                workerId: options.workerId,
                leaseMs: options.leaseMs,
                limit: free,
              }).catch((error: unknown) => {
                if (isTransientDatabaseError(error)) lostConnection = true;
                throw error;
              }),
            { log, what: 'claim', shouldStop: () => stopping, onHang: options.onDatabaseHang },
          );
          if (lostConnection && options.listen !== false) {
            lostConnection = false;
            void resubscribe();
          }
          for (const job of jobs) start(job);
          mayHaveMore = jobs.length === free;
        } catch (error) {
          log('claim.failed', { error: describe(error) });
        }
      }
      if (stopping) break;
      if (mayHaveMore && running.size < options.concurrency) continue;
      await sleepUntilWoken(await nextWakeMs(free > 0));
    }
  }

  function start(job: ClaimedJob): void {
    log('job.claimed', { job: job.id, payment: job.paymentId, attempt: job.attempts });
    const work = runJob(job, options).then(
      (result) =>
        log('job.finished', {
          job: job.id,
          payment: job.paymentId,
          result: result.job,
          retryInMs: 'delayMs' in result ? result.delayMs : undefined,
          reason: 'reason' in result ? result.reason : undefined,
        }),
      (error: unknown) =>
        // The lease will expire and another claim retries with the same downstream key.
        log('job.crashed', { job: job.id, payment: job.paymentId, error: describe(error) }),
    );
    const tracked = work.finally(() => {
      running.delete(tracked);
      wake();
    });
    running.add(tracked);
  }

  async function nextWakeMs(hasFreeSlots: boolean): Promise<number> {
    if (!hasFreeSlots) return options.pollIntervalMs;
    try {
      const dueInMs = await msUntilNextClaimable(sql);
      return dueInMs === null ? options.pollIntervalMs : Math.min(dueInMs, options.pollIntervalMs);
    } catch {
      return options.pollIntervalMs;
    }
  }

  async function sleepUntilWoken(ms: number): Promise<void> {
    if (wakeRequested) {
      wakeRequested = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeSleeper = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wakeSleeper = () => {};
    wakeRequested = false;
  }

  return {
    inFlight: () => running.size,
    async stop(graceMs) {
      stopping = true;
      wake();
      await loop;
      const drained = Promise.allSettled([...running]).then(() => true);
      const finished = await Promise.race([drained, sleep(graceMs).then(() => false)]);
      if (!finished) {
        // Their leases expire and another worker re-runs them with the same downstream key.
        log('dispatcher.abandoned_in_flight', { jobs: running.size });
      }
      await (await listener)?.unlisten().catch(() => {});
    },
  };
}

/**
 * LISTENs for "a job was inserted" (payload ignored: the claim query decides what is due).
 * postgres.js re-LISTENs after a reconnect and calls `onlisten` again, where we claim once
 * in case a notification was sent while we were disconnected.
 */
async function listenForNewJobs(
  options: DispatcherOptions,
  wake: () => void,
  isStopping: () => boolean,
): Promise<postgres.ListenMeta | null> {
  while (!isStopping()) {
    try {
      return await options.sql.listen(schema.OUTBOX_NOTIFY_CHANNEL, wake, wake);
    } catch (error) {
      options.log('listen.failed', { error: describe(error) });
      await sleep(options.pollIntervalMs);
    }
  }
  return null;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    return code ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
