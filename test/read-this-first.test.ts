import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const GUIDE = 'docs/read-this-first.md';
const MAX_STOPS = 20;
const MAX_LINES = 3_000;

interface Stop {
  number: number;
  file: string;
  /** A function, const or class the file declares; `Class.method` for a method. */
  name: string;
}

/** The guide's stops: `N. [path](../path), \`name\`: what to look for.` */
function readStops(markdown: string): Stop[] {
  const stops: Stop[] = [];
  for (const line of markdown.split('\n')) {
    const match = /^(\d+)\. \[([^\]]+)\]\(\.\.\/([^)]+)\), `([^`]+)`: \S/.exec(line);
    if (!match) continue;
    const [, number, shown, target, name] = match;
    if (shown !== target) throw new Error(`stop ${number} shows ${shown} but links ${target}`);
    stops.push({ number: Number(number), file: target!, name: name! });
  }
  return stops;
}

const asPattern = (name: string) => name.replace(/[$]/g, '\\$');

/** True when `source` declares `name` (a function, const, let or class; or `Class.method`). */
function declares(source: string, name: string): boolean {
  const [owner, method] = name.split('.');
  const declaration = new RegExp(
    `(^|\\n)\\s*(export\\s+)?(default\\s+)?(async\\s+)?(function\\*?|const|let|class)\\s+${asPattern(owner!)}\\b`,
  );
  if (!declaration.test(source)) return false;
  if (method === undefined) return true;
  return new RegExp(`\\n\\s+(async\\s+)?(get\\s+)?${asPattern(method)}\\s*[(<]`).test(source);
}

/** What is wrong with one stop, if anything. */
function stopProblem(stop: Stop): string | undefined {
  const file = path.join(repoRoot, stop.file);
  if (!existsSync(file)) return `stop ${stop.number}: ${stop.file} does not exist`;
  if (!declares(readFileSync(file, 'utf8'), stop.name))
    return `stop ${stop.number}: ${stop.file} no longer declares ${stop.name}`;
  return undefined;
}

describe(GUIDE, () => {
  const stops = readStops(readFileSync(path.join(repoRoot, GUIDE), 'utf8'));

  it('every stop names a file that exists and a function that file still declares', () => {
    expect(stops.length, 'stops found in the guide').toBeGreaterThan(0);
    expect(stops.map((stop) => stop.number)).toEqual(stops.map((_, i) => i + 1));
    expect(stops.map(stopProblem).filter(Boolean)).toEqual([]);
  });

  it(`stays a day's reading: at most ${MAX_STOPS} stops and ${MAX_LINES} lines of files`, () => {
    expect(stops.length).toBeLessThanOrEqual(MAX_STOPS);
    const perFile = stops
      .filter((stop) => existsSync(path.join(repoRoot, stop.file)))
      .map((stop) => {
        const text = readFileSync(path.join(repoRoot, stop.file), 'utf8');
        return { file: stop.file, lines: text.trimEnd().split('\n').length };
      });
    const lines = perFile.reduce((sum, file) => sum + file.lines, 0);
    // Past the bound, cut a stop or point it at a smaller file: the guide is a day's reading.
    expect(lines, JSON.stringify(perFile, null, 1)).toBeLessThanOrEqual(MAX_LINES);
  });

  it('the check refuses a stop whose file or function is gone', () => {
    const stop = (file: string, name: string): Stop => ({ number: 1, file, name });
    expect(stopProblem(stop('packages/api/src/checkout/pay.ts', 'pay'))).toBeUndefined();
    expect(stopProblem(stop('packages/api/src/checkout/pay.ts', 'payTwice'))).toMatch(
      /no longer declares payTwice/,
    );
    expect(stopProblem(stop('apps/worker/src/moved-away.ts', 'chargePayment'))).toMatch(
      /does not exist/,
    );
    expect(
      stopProblem(
        stop('packages/idempotency/src/core/atomic-execution.ts', 'AtomicKeyExecution.complete'),
      ),
    ).toBeUndefined();
    expect(
      stopProblem(
        stop('packages/idempotency/src/core/atomic-execution.ts', 'AtomicKeyExecution.vanish'),
      ),
    ).toMatch(/no longer declares/);
  });

  it('is linked first from the README', () => {
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const firstLink = /\]\(([^)]+)\)/.exec(readme);
    expect(firstLink?.[1]).toBe(GUIDE);
  });
});
