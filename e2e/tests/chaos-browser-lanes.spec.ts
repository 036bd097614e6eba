import { runBrowserLanes } from '@once/chaos';
import { expect, test } from '@playwright/test';

/**
 * The browser lanes on a fake clock: a loaded machine makes each customer slow, so by the
 * clients' deadline only some have started. The floors measure the work, not the machine:
 * the rest start while the run is short of its floors, until the bound, never after it.
 */
function fakeClock() {
  let now = 0;
  const timers: { at: number; resolve: () => void }[] = [];
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => timers.push({ at: now + Math.max(0, ms), resolve }));
  /** Advances time one timer at a time until nothing waits. */
  const runAll = async (done: Promise<unknown>) => {
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    while (!finished) {
      await new Promise((r) => setImmediate(r));
      timers.sort((a, b) => a.at - b.at);
      const next = timers.shift();
      if (!next) continue;
      now = Math.max(now, next.at);
      next.resolve();
    }
  };
  return { now: () => now, sleep, runAll };
}

/** Eight customers planned 0-7 s in, one lane, each busy 20 s (a loaded machine), deadline at 40 s. */
async function lanes(options: { floor: number; boundAt: number }) {
  const clock = fakeClock();
  const customers = Array.from({ length: 8 }, (_, i) => ({
    id: `b${i + 1}`,
    startAtMs: i * 1_000,
  }));
  const started: { id: string; at: number; deadline: number }[] = [];
  let paid = 0;
  const done = runBrowserLanes(customers, {
    concurrency: 1,
    startWhenDue: (c) => clock.sleep(c.startAtMs - clock.now()),
    now: clock.now,
    deadlineAt: () => 40_000,
    boundAt: () => options.boundAt,
    short: () => paid < options.floor,
    lateCustomerMs: 30_000,
    run: async (c, deadlineAt) => {
      started.push({ id: c.id, at: clock.now(), deadline: deadlineAt() });
      await clock.sleep(20_000);
      paid++;
    },
  });
  await clock.runAll(done);
  return { ...(await done), started };
}

test('past the deadline, customers still start while the run is short of its floors', async () => {
  const { started, letIn } = await lanes({ floor: 5, boundAt: 200_000 });
  // 0, 20 and 40 s before the deadline; 60 and 80 s after it, until five had paid.
  expect(started.map((s) => s.at)).toEqual([0, 20_000, 40_000, 60_000, 80_000]);
  expect(letIn).toBe(5);
  // A late customer has a deadline of its own (its start + 30 s), not the passed one.
  expect(started[3]!.deadline).toBe(90_000);
});

test('no customer starts past the bound, short or not; a late one never outlives it', async () => {
  const { started } = await lanes({ floor: 8, boundAt: 70_000 });
  expect(started.map((s) => s.at)).toEqual([0, 20_000, 40_000, 60_000]);
  expect(started[3]!.deadline).toBe(70_000);
});

test('a run whose floors are met starts nobody past the deadline', async () => {
  const { started } = await lanes({ floor: 2, boundAt: 200_000 });
  expect(started.map((s) => s.at)).toEqual([0, 20_000, 40_000]);
});
