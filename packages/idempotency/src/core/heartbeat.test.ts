import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createHeartbeatScheduler } from './heartbeat.ts';

describe('heartbeat', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews every interval after the last renewal, through a failing store, until stopped', async () => {
    const answers: Array<'ok' | Error> = ['ok', new Error('store down'), 'ok'];
    const renew = vi.fn(async () => {
      const answer = answers.shift() ?? 'ok';
      if (answer instanceof Error) throw answer;
      return answer;
    });
    const onLost = vi.fn();
    const beat = createHeartbeatScheduler().start({ intervalMs: 100, renew, onLost });
    await vi.advanceTimersByTimeAsync(99);
    expect(renew).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(renew).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(renew).toHaveBeenCalledTimes(3);
    await beat.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(renew).toHaveBeenCalledTimes(3);
    expect(onLost).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops and tells the holder once its lease is lost; a finished key just stops', async () => {
    const scheduler = createHeartbeatScheduler();
    const lostRenew = vi.fn(async () => 'lost' as const);
    const onLost = vi.fn();
    scheduler.start({ intervalMs: 50, renew: lostRenew, onLost });
    const finishedRenew = vi.fn(async () => 'finished' as const);
    const notLost = vi.fn();
    scheduler.start({ intervalMs: 50, renew: finishedRenew, onLost: notLost });
    await vi.advanceTimersByTimeAsync(500);
    expect(lostRenew).toHaveBeenCalledTimes(1);
    expect(onLost).toHaveBeenCalledTimes(1);
    expect(finishedRenew).toHaveBeenCalledTimes(1);
    expect(notLost).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stop waits for the renewal in flight, one renewal at a time', async () => {
    let finish: (result: 'ok') => void = () => {};
    const renew = vi.fn(() => new Promise<'ok'>((resolve) => (finish = resolve)));
    const beat = createHeartbeatScheduler().start({ intervalMs: 10, renew, onLost: vi.fn() });
    await vi.advanceTimersByTimeAsync(100);
    expect(renew).toHaveBeenCalledTimes(1);
    let stopped = false;
    const stopping = beat.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish('ok');
    await stopping;
    expect(vi.getTimerCount()).toBe(0);
  });
});
