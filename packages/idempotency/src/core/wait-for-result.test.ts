import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKeyWakeups } from './wait-for-result.ts';

const id = { tenantId: 't', operation: 'pay', key: 'k' };

// A controllable clock: time moves only when the test moves it, so "at once" means "before
// any time passed" and "waits its time" means "not a millisecond earlier", on a machine of
// any speed (wall-clock bounds flaked on two shared cores).
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Tracks whether a promise has settled, without waiting for it. */
function track(promise: Promise<unknown>): { done: boolean } {
  const state = { done: false };
  void promise.then(() => {
    state.done = true;
  });
  return state;
}

/** Lets every pending promise callback run (no timer fires: the clock stands still). */
const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('createKeyWakeups', () => {
  it('wakes a sleeping waiter of the key at once, not waiters of other keys', async () => {
    const wakeups = createKeyWakeups();
    const watch = wakeups.watch(id);
    const other = wakeups.watch({ ...id, key: 'other' });
    const sleeping = track(watch.sleep(5_000));
    const otherSleeping = track(other.sleep(300));
    await flush();
    expect(sleeping.done).toBe(false);

    wakeups.wake(id);
    await flush();
    // Woken with no time passed: the wake, not the 5 s timer, ended the sleep.
    expect(sleeping.done).toBe(true);
    expect(otherSleeping.done).toBe(false);
    // The other key's waiter sleeps its whole 300 ms, and not a millisecond less.
    await vi.advanceTimersByTimeAsync(299);
    expect(otherSleeping.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(otherSleeping.done).toBe(true);
    watch.close();
    other.close();
  });

  it('keeps a wake that came while the waiter was reading the key: the next sleep returns at once', async () => {
    const wakeups = createKeyWakeups();
    const watch = wakeups.watch(id);
    wakeups.wake(id); // the holder finished while the waiter's lookup was in flight
    const first = track(watch.sleep(5_000));
    await flush();
    expect(first.done).toBe(true);
    // Consumed: the following sleep waits its time again.
    const again = track(watch.sleep(50));
    await vi.advanceTimersByTimeAsync(49);
    expect(again.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(again.done).toBe(true);
    watch.close();
  });
});
