import { Session } from 'node:inspector/promises';

/** Bytes between heap samples: small enough for a few percent of noise over a few MB. */
export const SAMPLING_INTERVAL_BYTES = 256;

/**
 * Bytes of JavaScript heap `op` allocates per run, averaged over `count` runs one after another:
 * V8's sampling heap profiler (what `--heap-prof` uses) keeping the samples of objects that
 * garbage collection already freed, so the sum is an unbiased estimate of everything allocated,
 * not of what is still alive. Objects that escape analysis keeps off the heap are not counted
 * (they cost nothing); memory outside the V8 heap (ArrayBuffer backing stores) is not either.
 *
 * @example
 * const bytes = await allocatedBytesPerRun(() => handler(request()), 2_000);
 */
export async function allocatedBytesPerRun(
  op: () => Promise<void>,
  count: number,
): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL_BYTES,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    for (let i = 0; i < count; i++) await op();
    const { profile } = await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const stack = [profile.head];
    for (let node = stack.pop(); node; node = stack.pop()) {
      bytes += node.selfSize;
      stack.push(...node.children);
    }
    return bytes / count;
  } finally {
    await session.post('HeapProfiler.disable');
    session.disconnect();
  }
}
