/**
 * `npm run chaos:planted -w e2e -- [--bug NAME] [--seeds N] [--first-seed S] [chaos options...]`
 *
 * Proof that the checker can fail: for each planted bug (a small patch in this folder),
 * applies it to a temporary copy of the committed tree and runs the chaos suite there with
 * seeds S, S+1, ... until a run reports a violation that proves that bug (its `provedBy`
 * kinds: another violation is not this bug caught), at most N seeds (default 10). Chaos
 * options given apply to every bug; without them each bug runs its own profile (`ci`, or
 * `failover --mode async` for a bug only a lost commit reaches). Exits 1 if a patch no longer
 * applies or a bug went unnoticed for N seeds.
 */
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '@once/scripts/start-system';
import {
  patchApplies,
  plantedBugs,
  preparePlantedCopy,
  provesBug,
  removePlantedCopy,
  runChaosIn,
  violationKindsIn,
} from './planted-bugs.ts';

const argv = process.argv.slice(2).filter((a) => a !== '--');
const take = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const [, value] = argv.splice(i, 2);
  return value;
};
const only = take('bug');
const seeds = Number(take('seeds') ?? 10);
const firstSeed = Number(take('first-seed') ?? 1);
/** Chaos options from the command line; none: each bug's own (`profileArgs`). */
const chaosArgs = argv;

// Ctrl-C or a `kill`: the current run stops its system, the copy is removed, then we exit.
// Without this, each interrupted run left a PostgreSQL and the apps behind.
const interrupt = new AbortController();
let interruptedBy: NodeJS.Signals | undefined;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    interruptedBy = signal;
    console.log(`planted: ${signal}: stopping the current run and removing its copy`);
    interrupt.abort();
  });
}

let failures = 0;
for (const bug of plantedBugs().filter((b) => !only || b.name === only)) {
  if (interruptedBy) break;
  const applies = patchApplies(bug, repoRoot);
  if (!applies.ok) {
    console.log(`planted ${bug.name}: PATCH NO LONGER APPLIES\n${applies.error}`);
    failures++;
    continue;
  }
  const copy = preparePlantedCopy(bug, repoRoot);
  let caughtAt: number | undefined;
  try {
    for (let seed = firstSeed; seed < firstSeed + seeds && caughtAt === undefined; seed++) {
      const out = path.join(repoRoot, '.data/chaos-planted', bug.name, `seed-${seed}`);
      const profileArgs = chaosArgs.length > 0 ? chaosArgs : bug.profileArgs;
      const args = ['--seed', String(seed), ...profileArgs, '--out', out];
      const result = await runChaosIn(copy, args, interrupt.signal);
      if (interruptedBy) break;
      const verdict = /^chaos: result: (\d+) violation\(s\)(.*)$/m.exec(result.output);
      console.log(
        `planted ${bug.name}: seed ${seed}: exit ${result.code}, ${verdict ? `${verdict[1]} violation(s)${verdict[2]}` : 'no verdict'}`,
      );
      // Caught only by a violation that proves this bug (its `provedBy` kinds).
      if (verdict && provesBug(bug, violationKindsIn(result.output))) caughtAt = seed;
      else if (verdict && Number(verdict[1]) > 0)
        console.log(
          `planted ${bug.name}: seed ${seed}: violations, but none of ${bug.provedBy.join(', ')}: not caught`,
        );
      else if (result.code !== 0) console.log(result.output.slice(-3000));
    }
  } finally {
    removePlantedCopy(copy);
  }
  if (interruptedBy) break;
  if (caughtAt === undefined) {
    console.log(`planted ${bug.name}: NOT CAUGHT within ${seeds} seed(s)`);
    failures++;
  } else console.log(`planted ${bug.name}: caught at seed ${caughtAt}`);
}
if (interruptedBy) process.exit(128 + os.constants.signals[interruptedBy]);
process.exit(failures > 0 ? 1 : 0);
