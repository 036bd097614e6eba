/**
 * The one seeded PRNG (mulberry32): a schedule is a pure function of one seed, so `--seed N`
 * replays the same intents, behaviours and faults at the same offsets.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Shuffles `items` in place (Fisher-Yates). */
  shuffle<T>(items: T[]): void {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
  }

  /** A child generator: drawing from it never shifts this one's later draws. */
  fork(label: string): Rng {
    return new Rng(fnv1a(label, this.state ^ 0x811c9dc5));
  }

  /** A hex token (for idempotency keys): deterministic per seed. */
  token(length = 16): string {
    let out = '';
    while (out.length < length) out += this.int(0, 0xffff).toString(16).padStart(4, '0');
    return out.slice(0, length);
  }
}

/**
 * Draws from the seed and a name: the same seed and name give the same draws, whatever order
 * concurrent requests arrive in.
 */
export function seededRandom(seed: number, name = ''): () => number {
  const rng = new Rng((seed ^ fnv1a(name, 0x811c9dc5)) >>> 0);
  return () => rng.next();
}

function fnv1a(text: string, basis: number): number {
  let hash = basis;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
