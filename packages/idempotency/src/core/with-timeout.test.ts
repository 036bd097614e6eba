import { describe, expect, it, vi } from 'vitest';
import { StoreTimeoutError, withTimeout } from './with-timeout.ts';

describe('withTimeout', () => {
  it('passes a prompt value or error through and leaves no timer behind', async () => {
    vi.useFakeTimers();
    try {
      await expect(withTimeout(Promise.resolve(7), 1_000)).resolves.toBe(7);
      await expect(withTimeout(Promise.reject(new Error('boom')), 1_000)).rejects.toThrow('boom');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects with StoreTimeoutError when the call is slower, then hands a late success to onLateSuccess', async () => {
    let finish!: (value: string) => void;
    const slow = new Promise<string>((resolve) => {
      finish = resolve;
    });
    const late: string[] = [];
    const bounded = withTimeout(slow, 20, (value) => late.push(value));
    await expect(bounded).rejects.toBeInstanceOf(StoreTimeoutError);
    finish('acquired');
    await slow;
    await Promise.resolve();
    expect(late).toEqual(['acquired']);
  });

  it('ignores a late failure after the timeout (no unhandled rejection)', async () => {
    let fail!: (error: Error) => void;
    const slow = new Promise<string>((_, reject) => {
      fail = reject;
    });
    await expect(withTimeout(slow, 20)).rejects.toBeInstanceOf(StoreTimeoutError);
    fail(new Error('late'));
    await slow.catch(() => {});
  });
});
