import type { Idempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { Phase } from '../core/execution.ts';
import type { IdempotencyEvent, KeyIdentity } from '../core/types.ts';

/** Options of `createCompleter`. */
export interface CompleterOptions<TTx> {
  idempotency: Idempotency<TTx>;
  /**
   * Per operation, its phases by recovery point: the functions its route gives
   * `exec.runPhases`. The completer resumes only keys whose first phase committed (a key that
   * committed nothing is the sweeper's to release), so it needs the phases from the first
   * `advanceTo` on; they get no request: what they need is in `exec.recoveryData` or in the
   * rows the earlier phases wrote.
   */
  operations: Record<string, Record<string, Phase<TTx>>>;
  /** Most keys one pass takes over, over all operations. Default 20. */
  batchSize?: number;
  /** Only keys whose lease ended at least this long ago (a retrying client comes first). Default 0. */
  graceMs?: number;
  /** Pause between passes of `start()`. Default 10 s. */
  everyMs?: number;
  /** Longest pause after passes that failed in a row (doubling from `everyMs`). Default 5 min. */
  maxBackoffMs?: number;
  /** Told of each pass that completed keys (`resumed`, with its `count`). */
  onEvent?: (event: IdempotencyEvent) => void;
  /** A key whose phases failed (`id`), or a pass that failed. Default: `console.error`. */
  onError?: (error: unknown, id?: KeyIdentity) => void;
}

/** What one pass did: keys completed, keys whose phases failed, keys taken from it meanwhile. */
export interface CompleterPass {
  completed: number;
  failed: number;
  lost: number;
}

/**
 * A completer: finishes multi-step (`runPhases`) operations whose client never came back. Each
 * pass takes over keys left at a recovery point past their lease (in progress, a phase
 * committed, `onExpiredLease: 'resume'`) one at a time, exactly as a retry's takeover would (a
 * new owner token; the old holder's writes are refused from then on; a retry or another
 * completer that takes the key first wins and this one writes nothing), runs the remaining
 * phases and completes the key, so a later retry gets the replay. A phase that throws leaves
 * the key at its recovery point for the next pass or a retry. Safe in every process.
 *
 * @example
 * const completer = createCompleter({ idempotency, operations: { 'rides.create': afterFirstPhase } });
 * const running = completer.start(); // ... on shutdown: await running.stop();
 */
export function createCompleter<TTx>(options: CompleterOptions<TTx>) {
  const { idempotency, operations } = options;
  const batchSize = options.batchSize ?? 20;
  const graceMs = options.graceMs ?? 0;
  const everyMs = options.everyMs ?? 10_000;
  const maxBackoffMs = options.maxBackoffMs ?? 300_000;
  const onError = options.onError ?? ((error: unknown) => console.error(error));

  /** One bounded pass: up to `batchSize` keys, the operations taken in turn, until `stopped()`. */
  async function pass(stopped: () => boolean): Promise<CompleterPass> {
    const result: CompleterPass = { completed: 0, failed: 0, lost: 0 };
    const failed = new Set<string>();
    const left = new Set(Object.keys(operations));
    let taken = 0;
    while (left.size > 0 && taken < batchSize && !stopped()) {
      for (const operation of [...left]) {
        if (taken >= batchSize || stopped()) break;
        const phases = operations[operation] ?? {};
        const resumed = await idempotency.resumeOne(operation, phases, graceMs);
        if (!resumed) {
          left.delete(operation);
          continue;
        }
        taken++;
        const name = JSON.stringify([resumed.id.tenantId, resumed.id.key]);
        if (resumed.error === undefined) result.completed++;
        else if (isIdempotencyError(resumed.error, 'idempotency_lease_lost')) result.lost++;
        else {
          result.failed++;
          onError(resumed.error, resumed.id);
          // A failed key goes to the back of the queue: met again, the rest is newer than it.
          if (failed.has(name)) left.delete(operation);
          failed.add(name);
        }
      }
    }
    if (result.completed > 0) options.onEvent?.({ type: 'resumed', count: result.completed });
    return result;
  }

  /** Passes every `everyMs` (at once after a full batch, backing off after failures) until `stop()`. */
  function start(): { stop(): Promise<void> } {
    let stopping = false;
    let wake = () => {};
    const loop = (async () => {
      let failures = 0;
      while (!stopping) {
        let full = false;
        try {
          const done = await pass(() => stopping);
          failures = done.failed > 0 ? failures + 1 : 0;
          full = done.completed + done.failed + done.lost >= batchSize;
        } catch (error) {
          failures++;
          onError(error);
        }
        if (stopping || (full && failures === 0)) continue;
        const pauseMs = Math.min(maxBackoffMs, everyMs * 2 ** failures);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, pauseMs).unref();
        });
      }
    })();
    return {
      /** Finish the key in hand, then stop. */
      async stop() {
        stopping = true;
        wake();
        await loop;
      },
    };
  }

  return {
    /** One bounded pass, now (for a scheduler of the app's own: a cron job, a queue). */
    runOnce: () => pass(() => false),
    start,
  };
}
