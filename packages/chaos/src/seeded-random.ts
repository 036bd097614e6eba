/**
 * A deterministic random source (mulberry32) derived from the run's seed and a name: the
 * same seed and name give the same draws, whatever order concurrent requests arrive in.
 *
 * @example
 * const random = seededRandom(7, 'checkout-3/attempt-1');
 * if (random() < 0.2) dropAnswer();
 */
export function seededRandom(seed: number, name = ''): () => number {
  let state = (seed ^ hashName(name)) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hashName(name: string): number {
  // FNV-1a: small, stable across platforms, good enough to spread names over seeds.
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
