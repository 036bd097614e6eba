/**
 * `npm test`: every check the project has, in two phases of steps run at once: first lint,
 * layers, import cycles, dead exports, the type-checks and the web build both test runners
 * serve; then vitest and Playwright (mostly waiting on timers and child processes, so the two
 * share the cores in far less time than one after the other). Each step's lines are prefixed
 * with its name; every step runs even after a failure, so one run shows every problem. The
 * summary gives each step's and phase's time; its last line is the runners' combined count.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { stripVTControlCharacters } from 'node:util';
import { repoRoot } from './system/start-system.ts';
import { TEST_NEXT_DIST_DIR } from './system/web-build.ts';

interface Step {
  name: string;
  command: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** A test runner's JSON report: its counts, and each failed test's name and first error line. */
  report?: () => { passed: number; failed: number; skipped: number; failures: string[] };
}

const reports = path.join(repoRoot, '.data/test-reports');
mkdirSync(reports, { recursive: true });
const bin = (name: string) => path.join(repoRoot, 'node_modules/.bin', name);

/** One program per set of workspaces that see the same globals (see each tsconfig's comment). */
const typecheck = (name: string, project: string): Step => ({
  name,
  command: [bin('tsc'), '--noEmit', '-p', project],
});

const checks: Step[] = [
  { name: 'lint', command: [bin('biome'), 'check', '.'] },
  { name: 'layers', command: [bin('tsx'), 'scripts/check-layers.ts'] },
  // No import cycle between files, type-only imports included (dpdm.config.json: which files).
  { name: 'cycles', command: [bin('dpdm')] },
  { name: 'dead exports', command: [bin('knip'), '--no-progress'] },
  typecheck('types: node', 'tsconfig.typecheck-node.json'),
  typecheck('types: whatwg', 'tsconfig.typecheck-whatwg.json'),
  typecheck('types: web', 'apps/web/tsconfig.json'),
  // The root's scripts/ and test/ (the launcher, the demo, test support): their own globals.
  typecheck('types: scripts', 'tsconfig.json'),
  // Both runners' global setups build it when stale; built here, they find it fresh.
  {
    name: 'web build',
    // `types: web` checks the same program beside it: next build skips its own copy of that
    // check (apps/web/next.config.ts); the step still fails the run on a type error.
    env: { ONCE_WEB_TYPES_CHECKED: '1' },
    command: [
      bin('tsx'),
      '-e',
      `import('./scripts/system/web-build.ts').then((m) => m.ensureWebBuild(${JSON.stringify(TEST_NEXT_DIST_DIR)}))`,
    ],
  },
];

const tests: Step[] = [
  {
    name: 'unit + integration',
    command: [
      bin('vitest'),
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${path.join(reports, 'vitest.json')}`,
    ],
    report: () => {
      const report = readJson(path.join(reports, 'vitest.json')) as VitestReport;
      // A file that failed outside its tests (a beforeAll, an import) fails no test: count it.
      const outside = new Set(filesFailedOutsideTests(report));
      return {
        passed: report.numPassedTests,
        failed: report.numFailedTests + outside.size,
        skipped: report.numPendingTests + report.numTodoTests,
        failures: report.testResults.flatMap((file) => {
          const where = path.relative(repoRoot, file.name);
          if (outside.has(file)) {
            return [
              `${where}: failed outside its tests (${failureLine(file.message || 'see its output above')})`,
            ];
          }
          return file.assertionResults
            .filter((t) => t.status === 'failed')
            .map((t) => `${where} › ${t.fullName}: ${failureLine(t.failureMessages[0])}`);
        }),
      };
    },
  },
];

if (existsSync(path.join(repoRoot, 'e2e/playwright.config.ts'))) {
  tests.push({
    name: 'end-to-end',
    command: [bin('playwright'), 'test', '--reporter=list,json'],
    cwd: path.join(repoRoot, 'e2e'),
    env: { PLAYWRIGHT_JSON_OUTPUT_NAME: path.join(reports, 'playwright.json') },
    report: () => {
      interface Suite {
        file: string;
        suites?: Suite[];
        specs: {
          title: string;
          tests: { status: string; results: { error?: { message?: string } }[] }[];
        }[];
      }
      const report = readJson(path.join(reports, 'playwright.json')) as {
        stats: { expected: number; unexpected: number; flaky: number; skipped: number };
        suites: Suite[];
      };
      const walk = (suite: Suite): string[] => [
        ...suite.specs.flatMap((spec) =>
          spec.tests
            .filter((t) => t.status === 'unexpected')
            .map((t) => {
              const error = t.results.find((r) => r.error)?.error?.message;
              return `${suite.file} › ${spec.title}: ${failureLine(error)}`;
            }),
        ),
        ...(suite.suites ?? []).flatMap(walk),
      ];
      return {
        passed: report.stats.expected + report.stats.flaky,
        failed: report.stats.unexpected,
        skipped: report.stats.skipped,
        failures: report.suites.flatMap(walk),
      };
    },
  });
}

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: {
    name: string;
    status: string;
    message?: string;
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[];
  }[];
}

/** Files vitest marked failed without a failed test: a hook or the import threw. */
function filesFailedOutsideTests(report: VitestReport): VitestReport['testResults'] {
  return report.testResults.filter(
    (file) => file.status === 'failed' && !file.assertionResults.some((t) => t.status === 'failed'),
  );
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/**
 * A failure on one line: its first line that is not the matcher's name, then what was
 * expected and received (CI keeps the summary and little else of a failing run).
 */
function failureLine(message: string | undefined): string {
  const lines = stripVTControlCharacters(message ?? 'no error message').split('\n');
  const first =
    lines.find((l) => l.trim() && !/^\s*(Error:\s*)?expect\(/.test(l)) ?? lines[0] ?? '';
  const told = lines.filter((l) => /^\s*(Expected|Received)\b/.test(l) && l !== first);
  return [first, ...told.slice(0, 2)]
    .map((l) => l.trim())
    .join(' · ')
    .slice(0, 600);
}

/**
 * Why a runner exited non-zero although its report holds no failed test: Vitest does so
 * when it caught an error outside any test (an unhandled rejection, a worker that died) and
 * prints it under an "Unhandled Errors" banner, with the test file it ran during.
 */
function errorsOutsideTests(output: string[]): string[] {
  const lines = output.map((l) => stripVTControlCharacters(l).trim());
  const banner = lines.findIndex((l) => /⎯ Unhandled (Errors?|Rejection)\b/.test(l));
  if (banner < 0) {
    const last = lines.findLast((l) => /\b(\w*Error|timed out)\b/.test(l));
    return last ? [last.slice(0, 600)] : [];
  }
  const after = lines.slice(banner + 1);
  const error = after.find((l) => /^(\w*Error|\[vitest)/.test(l));
  const origin = after.find((l) => /^This error originated in/.test(l));
  const latest = after.find((l) => /^The latest test that might've caused/.test(l));
  return [
    [
      error ?? 'an error outside any test, see the output above',
      origin?.split('. ')[0],
      latest?.split('. ')[0],
    ]
      .filter(Boolean)
      .join(' · ')
      .slice(0, 600),
  ];
}

/**
 * Runs one step, each of its output lines prefixed with the step's name; resolves with the
 * exit code and the lines (kept for what a report cannot say).
 */
function run(step: Step): Promise<{ code: number; output: string[] }> {
  const output: string[] = [];
  return new Promise((resolve) => {
    const [command, ...args] = step.command;
    const child = spawn(command!, args, {
      cwd: step.cwd ?? repoRoot,
      env: { ...process.env, ...step.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = `[${step.name}] `;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        console.log(prefix + line);
      });
    }
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

interface Result {
  name: string;
  ok: boolean;
  seconds: number;
  note: string;
  counted: boolean;
  failures: string[];
}
const results: Result[] = [];
const phases: { name: string; seconds: number }[] = [];
const totals = { passed: 0, failed: 0, skipped: 0 };

async function runStep(step: Step): Promise<void> {
  console.log(
    `━━ start ${step.name} ━━ ${step.command
      .map((c) => (path.isAbsolute(c) ? path.basename(c) : c.length > 40 ? '…' : c))
      .join(' ')}`,
  );
  const started = Date.now();
  const { code, output } = await run(step);
  let note = '';
  let ok = code === 0;
  let failures: string[] = [];
  if (step.report) {
    try {
      const counts = step.report();
      failures = counts.failures;
      totals.passed += counts.passed;
      totals.failed += counts.failed;
      totals.skipped += counts.skipped;
      note = `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
      // Trust the report as well as the exit code: a dependency's exit hook once turned a
      // failing Vitest run into exit 0 (see packages/postgres/src/embedded-postgres.ts).
      if (counts.failed > 0) ok = false;
      // And the exit code as well as the report: an error outside every test fails the run
      // with no failed test in the report. It counts as one, so the last line is not green.
      if (code !== 0 && counts.failed === 0) {
        totals.failed += 1;
        note += `, exit ${code} with no failed test`;
      }
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
  if (!ok && failures.length === 0) {
    failures = errorsOutsideTests(output).map((e) => `${step.name}: ${e}`);
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(`━━ ${ok ? 'done' : 'FAILED'} ${step.name} ━━ ${seconds.toFixed(0)} s`);
  results.push({ name: step.name, ok, seconds, note, counted: !!step.report, failures });
}

async function runPhase(name: string, steps: Step[]): Promise<void> {
  const started = Date.now();
  await Promise.all(steps.map(runStep));
  phases.push({ name, seconds: (Date.now() - started) / 1000 });
}

const started = Date.now();
await runPhase('checks and web build', checks);
await runPhase('tests', tests);

console.log('\n━━ summary ━━');
for (const r of results) {
  console.log(
    `${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(20)} ${r.seconds.toFixed(0).padStart(4)} s  ${r.note}`,
  );
}
for (const failure of results.flatMap((r) => r.failures).slice(0, 10)) {
  console.log(`  failed: ${failure}`);
}
for (const p of phases) console.log(`phase ${p.name}: ${p.seconds.toFixed(0)} s`);
console.log(`total: ${((Date.now() - started) / 1000).toFixed(0)} s`);
const failedSteps = results.filter((r) => !r.ok).length;
// A red lint or type-check step counts as one failure, so the line is never green while a
// step was red.
const failedChecks = results.filter((r) => !r.ok && !r.counted).length;
console.log(
  `Tests: ${totals.passed} passed, ${totals.failed + failedChecks} failed, ${totals.skipped} skipped`,
);
process.exit(failedSteps > 0 ? 1 : 0);
