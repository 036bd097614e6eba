import type { KeyIdentity, KeyLookup, KeyRecord, WaitForResultPolicy } from './types.ts';

/** Upper bound of `waitForResult.timeoutMs`: a waiting duplicate holds a request open. */
const MAX_WAIT_FOR_RESULT_MS = 120_000;

const DEFAULT_POLL_MS = 200;
const FIRST_POLL_MS = 10;

/** Refuse a `waitForResult` that is not a bound (bad configuration fails before anything runs). */
export function assertWaitForResult(
  wait: WaitForResultPolicy | false | undefined,
  operation: string,
): void {
  if (wait === undefined || wait === false) return;
  const { timeoutMs, pollMs } = wait;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WAIT_FOR_RESULT_MS) {
    throw new RangeError(
      `waitForResult.timeoutMs of ${operation} must be 1..${MAX_WAIT_FOR_RESULT_MS} ms (got ${timeoutMs})`,
    );
  }
  if (pollMs !== undefined && (!Number.isFinite(pollMs) || pollMs < 1)) {
    throw new RangeError(
      `waitForResult.pollMs of ${operation} must be a positive number of ms (got ${pollMs})`,
    );
  }
}

/**
 * In-process wake-ups, one registry per engine: an engine that finishes a key (completed,
 * released, unknown, lease ended) wakes the duplicates of that key waiting in the same process
 * at once, so a double click on one server is answered without a polling delay. Waiters in
 * other processes read the key again after their pause; the store needs no LISTEN/NOTIFY.
 */
export function createKeyWakeups() {
  const watchers = new Map<string, Set<{ woken: boolean; resolve?: () => void }>>();
  const name = (id: KeyIdentity) => `${id.tenantId}\u0000${id.operation}\u0000${id.key}`;
  return {
    /**
     * Watch a key for the length of one wait; `close()` it when the wait ends. A wake that comes
     * while the waiter is reading the key (not sleeping) is kept: the next `sleep` returns at once.
     */
    watch(id: KeyIdentity) {
      const slot = name(id);
      const watcher: { woken: boolean; resolve?: () => void } = { woken: false };
      let set = watchers.get(slot);
      if (!set) {
        set = new Set();
        watchers.set(slot, set);
      }
      set.add(watcher);
      return {
        sleep(ms: number): Promise<void> {
          if (watcher.woken) {
            watcher.woken = false;
            return Promise.resolve();
          }
          return new Promise<void>((resolve) => {
            const timer = setTimeout(done, ms);
            function done() {
              clearTimeout(timer);
              watcher.resolve = undefined;
              watcher.woken = false;
              resolve();
            }
            watcher.resolve = done;
          });
        },
        close(): void {
          const current = watchers.get(slot);
          current?.delete(watcher);
          if (current?.size === 0) watchers.delete(slot);
          watcher.resolve?.();
        },
      };
    },
    wake(id: KeyIdentity): void {
      // Every finished request wakes its key; almost always nobody waits, and no name is built.
      if (watchers.size === 0) return;
      for (const watcher of watchers.get(name(id)) ?? []) {
        watcher.woken = true;
        watcher.resolve?.();
      }
    },
  };
}

/**
 * How a wait ended:
 * - `settled`: the key holds an answer for the waiter (completed -> replay, unknown -> 409 at
 *   once, another request's fingerprint -> 422); answer it from `record`;
 * - `free`: nobody holds the key any more (released, expired lease, expired response, gone):
 *   try again, as a retry would (the reservation lets exactly one waiter in);
 * - `timed_out`: the bound passed with the key still held; `record` is the last one read.
 */
export type WaitEnd =
  | { kind: 'settled'; record: KeyRecord }
  | { kind: 'free' }
  | { kind: 'timed_out'; record: KeyRecord };

/**
 * Wait, bounded by `deadline` (a `performance.now()` time), while another attempt holds the
 * key. Reads with the store's read-only lookup (no write, no lock), pausing 10 ms, then doubling
 * up to `pollMs`, woken early by `wakeups`.
 */
export async function waitWhileHeld(init: {
  id: KeyIdentity;
  /** The waiter's request: a key taken over by ANOTHER request settles as reused (422). */
  fingerprint: string;
  deadline: number;
  wait: WaitForResultPolicy;
  /** Leased mode: an expired lease of the same request is the waiter's to take over. */
  takesOverExpiredLeases: boolean;
  last: KeyRecord;
  lookup: () => Promise<KeyLookup | undefined>;
  wakeups: ReturnType<typeof createKeyWakeups>;
}): Promise<WaitEnd> {
  const watch = init.wakeups.watch(init.id);
  try {
    const maxPause = init.wait.pollMs ?? DEFAULT_POLL_MS;
    let pause = Math.min(FIRST_POLL_MS, maxPause);
    let last = init.last;
    for (;;) {
      const left = init.deadline - performance.now();
      if (left <= 0) return { kind: 'timed_out', record: last };
      await watch.sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, maxPause);
      const found = await init.lookup();
      if (!found) return { kind: 'free' };
      last = found.record;
      if (last.fingerprint !== init.fingerprint && last.state !== 'released' && !found.writable)
        return { kind: 'settled', record: last };
      if (last.state === 'in_progress') {
        if (isHeldNow(last)) continue;
        // An expired lease: the leased reservation takes it over (resuming); atomic mode only
        // when nothing committed (`writable`), else it keeps waiting for a leased retry.
        if (init.takesOverExpiredLeases || found.writable) return { kind: 'free' };
        continue;
      }
      if (last.state === 'completed' || last.state === 'unknown' || last.state === 'expired') {
        // A completed row past its retention is free again (the next attempt starts it over).
        if (found.writable) return { kind: 'free' };
        return { kind: 'settled', record: last };
      }
      return { kind: 'free' };
    }
  } finally {
    watch.close();
  }
}

/** An attempt holds the key: in progress and its lease still running (database clock). */
function isHeldNow(record: KeyRecord): boolean {
  return (
    record.state === 'in_progress' &&
    record.lockedUntil !== null &&
    record.lockedUntil.getTime() > record.now.getTime()
  );
}
