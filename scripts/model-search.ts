/**
 * `npm run search`: the model-based search over the merchant API
 * (test/money-model/money-model-search.test.ts) for longer than `npm test` gives it
 * (`-- --runs 500 --seed 42`), or against the planted bugs that prove it finds each class
 * (`-- --planted [name...] [--seeds 3]`): each patch in test/money-model/planted/ is applied to
 * a throw-away copy of the tree, and one line per bug tells the first seed that caught it.
 * `--webs 1` sends everything to one web process (default 2): a bug only two webs catch.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { plantedCopy, removePlantedCopy } from './system/planted-copy.ts';
import { repoRoot } from './system/start-system.ts';

const SEARCH_TEST = 'test/money-model/money-model-search.test.ts';
const PLANTED_DIR = path.join(repoRoot, 'test/money-model/planted');

const { values, positionals } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    planted: { type: 'boolean', default: false },
    seeds: { type: 'string', default: '10' },
    webs: { type: 'string', default: '2' },
  },
  allowPositionals: true,
});

/** The test a planted bug is caught by: its patch's `# caught by: <file>` line, or the search. */
function catcherOf(patchFile: string): string {
  const line = /^# caught by: (\S+)$/m.exec(readFileSync(patchFile, 'utf8'));
  return line?.[1] ?? SEARCH_TEST;
}

function runVitest(cwd: string, file: string, env: Record<string, string>) {
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    [path.join(cwd, 'node_modules/vitest/vitest.mjs'), 'run', file],
    { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return {
    passed: result.status === 0,
    output: `${result.stdout}\n${result.stderr}`,
    seconds: (Date.now() - started) / 1000,
  };
}

/** The checker's first words about a failure: the search's own message, or vitest's. */
function firstViolation(output: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest colours its output
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  const said = [/Caused by: Error: ([^\n]*)/, /(AssertionError: [^\n]*)/, /(Error: [^\n]*)/]
    .map((pattern) => pattern.exec(plain)?.[1])
    .find((words) => words !== undefined);
  return said ?? 'failed (see the run)';
}

if (!values.planted) {
  const env = {
    ONCE_MODEL_WEBS: values.webs,
    ONCE_MODEL_RUNS: values.runs ?? '200',
    ...(values.seed ? { ONCE_MODEL_SEED: values.seed } : {}),
  };
  const run = runVitest(repoRoot, SEARCH_TEST, env);
  const summary = /money model search: [^\n]*/.exec(run.output)?.[0];
  console.log(summary ?? run.output.slice(-4000));
  if (!run.passed) console.log(run.output.slice(-6000));
  process.exit(run.passed ? 0 : 1);
}

const patches = readdirSync(PLANTED_DIR)
  .filter((f) => f.endsWith('.patch'))
  .filter((f) => positionals.length === 0 || positionals.includes(f.replace(/\.patch$/, '')));
let missed = 0;
for (const patch of patches) {
  const patchFile = path.join(PLANTED_DIR, patch);
  const catcher = catcherOf(patchFile);
  // The search serves the web's routes itself: no web build to reuse.
  const copy = plantedCopy(repoRoot, patchFile, { reuseWebBuild: false });
  let verdict = `NOT caught in ${values.seeds} seeds`;
  try {
    for (let seed = 1; seed <= Number(values.seeds); seed++) {
      const run = runVitest(copy, catcher, {
        ONCE_MODEL_RUNS: '25',
        ONCE_MODEL_SEED: `${seed}`,
        ONCE_MODEL_WEBS: values.webs,
      });
      // A run that only missed a rule's coverage caught nothing.
      if (!run.passed && !/never answered /.test(run.output)) {
        verdict = `caught at seed ${seed} (${run.seconds.toFixed(0)} s) by ${catcher}: ${firstViolation(run.output)}`;
        break;
      }
    }
  } finally {
    removePlantedCopy(copy);
  }
  if (verdict.startsWith('NOT')) missed++;
  console.log(`${patch.replace(/\.patch$/, '')}: ${verdict}`);
}
process.exit(missed === 0 ? 0 : 1);
