// `npm run lint` (after Biome): the workspaces' layering, from what their files import.
// - apps sit above packages: no file of a package imports an app (tests may start an app
//   as a third party through its `testing` entry, the way a merchant's tests would);
// - every `@once/*` import is declared in the importer's package.json (removing a
//   dependency means removing it there too);
// - the mock processor stands in for a third party: it neither imports nor declares the
//   app's own packages (general ones such as @once/postgres and the published
//   @once/idempotency are fine);
// - no cycle between workspaces;
// - no relative import leaves its own area: each workspace (packages/*, apps/*, e2e, bench) and
//   the root's tooling (scripts/ and test/, one area: the root package) reaches another only
//   through its package name and `exports` (a test needing an app's helper imports its
//   `./testing` entry), never `../apps/*/src/...`; e2e and bench are tooling no workspace imports.
// One line per problem, exit 1; silent when all holds.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Workspace {
  name: string;
  /** Directories whose files belong to it (the root: scripts/ and test/). */
  dirs: string[];
  layer: 'package' | 'app' | 'tooling' | 'root';
  declared: Set<string>;
}

function readWorkspace(dir: string, layer: Workspace['layer'], dirs = [dir]): Workspace {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const declared = new Set(Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }));
  return { name: manifest.name, dirs, layer, declared };
}

function workspaces(): Workspace[] {
  const found: Workspace[] = [];
  for (const [parent, layer] of [
    ['packages', 'package'],
    ['apps', 'app'],
  ] as const) {
    for (const entry of readdirSync(path.join(repoRoot, parent))) {
      found.push(readWorkspace(path.join(repoRoot, parent, entry), layer));
    }
  }
  for (const entry of ['e2e', 'bench'])
    found.push(readWorkspace(path.join(repoRoot, entry), 'tooling'));
  // Declared in the root package.json; e2e imports what it uses of it as @once/scripts
  // (scripts/package.json `exports`: the system launcher, the HA cluster).
  const root = readWorkspace(repoRoot, 'root', [
    path.join(repoRoot, 'scripts'),
    path.join(repoRoot, 'test'),
  ]);
  found.push({ ...root, name: '@once/scripts' });
  return found;
}

/** The area a path belongs to: `packages/x`, `apps/x`, `e2e`, `bench`, or the root's. */
function areaOf(file: string): string {
  const [first, second] = path.relative(repoRoot, file).split(path.sep);
  if (first === 'packages' || first === 'apps') return `${first}/${second}`;
  if (first === 'e2e' || first === 'bench') return first;
  return 'the root (scripts/, test/)';
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
const RELATIVE_IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]*)['"]/g;
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
  for (const file of workspace.dirs.flatMap(sourceFiles)) {
    const text = readFileSync(file, 'utf8');
    const where = path.relative(repoRoot, file);
    for (const match of text.matchAll(RELATIVE_IMPORT)) {
      const target = path.resolve(path.dirname(file), match[1]!);
      if (areaOf(target) === areaOf(file)) continue;
      problems.push(
        `${where}: relative import '${match[1]}' leaves ${areaOf(file)} for ${areaOf(target)}: import it by package name (its exports)`,
      );
    }
    for (const match of text.matchAll(IMPORT)) {
      const target = byName.get(match[1]!);
      if (!target || target === workspace) continue;
      if (!workspace.declared.has(target.name)) {
        problems.push(`${where}: imports ${target.name}, not declared in its package.json`);
      }
      if (workspace.layer === 'package' && target.layer === 'app' && !isTest(file)) {
        problems.push(`${where}: a package imports the app ${target.name}`);
      }
      if (target.layer === 'tooling' && workspace.layer !== 'root') {
        problems.push(`${where}: imports ${target.name}, tooling no workspace depends on`);
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
