import { describe, expect, it } from 'vitest';
import { createKeyWakeups } from './wait-for-result.ts';

const id = { tenantId: 't', operation: 'pay', key: 'k' };

describe('createKeyWakeups', () => {
  it('wakes a sleeping waiter of the key at once, not waiters of other keys', async () => {
    const wakeups = createKeyWakeups();
    const watch = wakeups.watch(id);
    const other = wakeups.watch({ ...id, key: 'other' });
    const started = performance.now();
    const sleeping = watch.sleep(5_000);
    let otherWoke = false;
    void other.sleep(300).then(() => {
      otherWoke = performance.now() - started < 250;
    });
    wakeups.wake(id);
    await sleeping;
    expect(performance.now() - started).toBeLessThan(100);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(otherWoke).toBe(false);
    watch.close();
    other.close();
  });

  it('keeps a wake that came while the waiter was reading the key: the next sleep returns at once', async () => {
    const wakeups = createKeyWakeups();
    const watch = wakeups.watch(id);
    wakeups.wake(id); // the holder finished while the waiter's lookup was in flight
    const started = performance.now();
    await watch.sleep(5_000);
    expect(performance.now() - started).toBeLessThan(100);
    // Consumed: the following sleep waits its time again.
    const again = performance.now();
    await watch.sleep(50);
    expect(performance.now() - again).toBeGreaterThanOrEqual(45);
    watch.close();
  });
});
