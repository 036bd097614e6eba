// `npm run lint`: no import cycle between the files of the repository (type-only imports
// included: a reader following a type round in a circle is lost all the same). Cycles between
// workspaces are scripts/check-layers.ts's; this walks each file's own imports with dpdm,
// which parses them with the TypeScript compiler, so comments, strings and `import type` are
// read as TypeScript reads them. One line per cycle, exit 1; only the known ones (below) are
// printed when none else is found.
//
// dpdm rather than madge: it is built for this one question (cycles, type imports kept or
// dropped on purpose), uses the project's own TypeScript instead of a parser of its own, is
// released often, and walks the repository in about three seconds here.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCircular, parseDependencyTree } from 'dpdm';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Cycles that exist today and are being removed, each with who removes it. Listed so that the
 * check can hold every other file now; printed on every run, so none goes unnoticed. A cycle
 * that is gone is reported too: then delete its entry.
 */
const KNOWN_CYCLES: { files: string[]; why: string }[] = [];

const SOURCES = [
  'packages/*/src/**/*.{ts,tsx}',
  'packages/*/packaging/**/*.ts',
  'apps/*/src/**/*.{ts,tsx}',
  'apps/*/app/**/*.{ts,tsx}',
  'e2e/**/*.ts',
  'bench/src/**/*.ts',
  'scripts/**/*.ts',
  'test/**/*.ts',
];

/** A cycle named the same wherever the walk entered it: rotated to start at its least file. */
function cycleKey(files: readonly string[]): string {
  const start = files.indexOf([...files].sort()[0]!);
  return [...files.slice(start), ...files.slice(0, start)].join(' -> ');
}

const tree = await parseDependencyTree(SOURCES, {
  cwd: repoRoot,
  context: repoRoot,
  transform: false,
  exclude: /node_modules|\/dist\/|\/\.next/,
});
const found = parseCircular(tree).map((cycle) => cycle.map((file) => path.normalize(file)));
const known = new Map(KNOWN_CYCLES.map((cycle) => [cycleKey(cycle.files), cycle.why]));

let failed = false;
const seen = new Set<string>();
for (const cycle of found) {
  const key = cycleKey(cycle);
  seen.add(key);
  const why = known.get(key);
  if (why) {
    console.error(`cycles: known cycle, to be removed (${why}): ${key}`);
  } else {
    console.error(`cycles: import cycle: ${key} -> ${key.split(' -> ')[0]}`);
    failed = true;
  }
}
for (const [key] of known) {
  if (!seen.has(key)) console.error(`cycles: ${key} is gone: delete it from KNOWN_CYCLES`);
}
process.exit(failed ? 1 : 0);
