import { type HeapProfiler, Session } from 'node:inspector/promises';

/** Bytes between heap samples: small enough for a few percent of noise over a few MB. */
export const SAMPLING_INTERVAL_BYTES = 256;

/**
 * V8's sampling heap profile of `count` runs of `op`, one after another, keeping the samples of
 * objects that garbage collection already freed: every allocation is estimated, not only what
 * is still alive. Memory outside the V8 heap (ArrayBuffer backing stores) is not counted.
 */
export async function sampleAllocations(
  op: () => Promise<void>,
  count: number,
): Promise<HeapProfiler.SamplingHeapProfile> {
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
    return (await session.post('HeapProfiler.stopSampling')).profile;
  } finally {
    await session.post('HeapProfiler.disable');
    session.disconnect();
  }
}

/** Bytes of JavaScript heap `op` allocates per run, averaged over `count` runs. */
export async function allocatedBytesPerRun(
  op: () => Promise<void>,
  count: number,
): Promise<number> {
  const profile = await sampleAllocations(op, count);
  let bytes = 0;
  const stack = [profile.head];
  for (let node = stack.pop(); node; node = stack.pop()) {
    bytes += node.selfSize;
    stack.push(...node.children);
  }
  return bytes / count;
}
