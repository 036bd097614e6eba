/**
 * A small seeded PRNG (mulberry32): the whole chaos schedule is a pure function of one seed,
 * so `--seed N` replays the same intents, behaviours and faults at the same offsets.
 *
 * @example
 * const rng = new Rng(42);
 * rng.int(1, 3); rng.chance(0.2); rng.pick(['rest', 'trpc']);
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

  /** A child generator: drawing from it never shifts this one's later draws. */
  fork(label: string): Rng {
    let h = this.state ^ 0x811c9dc5;
    for (const c of label) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
    return new Rng(h >>> 0);
  }

  /** A hex token (for idempotency keys): deterministic per seed. */
  token(length = 16): string {
    let out = '';
    while (out.length < length) out += this.int(0, 0xffff).toString(16).padStart(4, '0');
    return out.slice(0, length);
  }
}

/** A fresh seed for a run that was not given one. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
