// `npm run lint` (after Biome): the workspaces' layering, from what their files import.
// - apps sit above packages: no file of a package imports an app (tests may start an app
//   as a third party through its `testing` entry, the way a merchant's tests would);
// - every `@once/*` import is declared in the importer's package.json (removing a
//   dependency means removing it there too);
// - the mock processor stands in for a third party: it neither imports nor declares the
//   app's own packages (general ones such as @once/postgres and the published
//   @once/idempotency are fine);
// - no cycle between workspaces.
// One line per problem, exit 1; silent when all holds.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Workspace {
  name: string;
  dir: string;
  layer: 'package' | 'app';
  declared: Set<string>;
}

function workspaces(): Workspace[] {
  const found: Workspace[] = [];
  for (const [parent, layer] of [
    ['packages', 'package'],
    ['apps', 'app'],
  ] as const) {
    for (const entry of readdirSync(path.join(repoRoot, parent))) {
      const dir = path.join(repoRoot, parent, entry);
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const declared = new Set(
        Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }),
      );
      found.push({ name: manifest.name, dir, layer, declared });
    }
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) files.push(...sourceFiles(full));
    else if (/\.(ts|tsx|mts|cts)$/.test(entry) && !entry.endsWith('.d.ts')) files.push(full);
  }
  return files;
}

const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)['"](@once\/[a-z-]+)(?:\/[^'"]*)?['"]/g;
const isTest = (file: string) => /\.test\.tsx?$|[\\/](testing|test-support)[\\/]/.test(file);

const THIRD_PARTY = '@once/processor';
/** The app's own packages: its schema, API and payments. */
const APP_PACKAGES = new Set(['@once/db', '@once/api', '@once/payments']);

const all = workspaces();
const byName = new Map(all.map((w) => [w.name, w]));
const problems: string[] = [];
const edges = new Map<string, Set<string>>();

for (const workspace of all) {
  const targets = new Set<string>();
  for (const file of sourceFiles(workspace.dir)) {
    const text = readFileSync(file, 'utf8');
    const where = path.relative(repoRoot, file);
    for (const match of text.matchAll(IMPORT)) {
      const target = byName.get(match[1]!);
      if (!target || target === workspace) continue;
      if (!workspace.declared.has(target.name)) {
        problems.push(`${where}: imports ${target.name}, not declared in its package.json`);
      }
      if (workspace.layer === 'package' && target.layer === 'app' && !isTest(file)) {
        problems.push(`${where}: a package imports the app ${target.name}`);
      }
      if (!isTest(file)) targets.add(target.name);
    }
  }
  edges.set(workspace.name, targets);
  if (workspace.name === THIRD_PARTY) {
    for (const name of workspace.declared) {
      if (APP_PACKAGES.has(name) || byName.get(name)?.layer === 'app') {
        problems.push(
          `${THIRD_PARTY} depends on the app's ${name}: the processor is a third party`,
        );
      }
    }
  }
}

// Depth-first search for a cycle through non-test imports.
const state = new Map<string, 'open' | 'done'>();
function visit(name: string, trail: string[]): void {
  if (state.get(name) === 'done') return;
  if (state.get(name) === 'open') {
    problems.push(`import cycle: ${[...trail.slice(trail.indexOf(name)), name].join(' -> ')}`);
    return;
  }
  state.set(name, 'open');
  for (const next of edges.get(name) ?? []) visit(next, [...trail, name]);
  state.set(name, 'done');
}
for (const name of edges.keys()) visit(name, []);

for (const problem of problems) console.error(`layers: ${problem}`);
process.exit(problems.length === 0 ? 0 : 1);
