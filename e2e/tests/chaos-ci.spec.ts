import path from 'node:path';
import { runChaos } from '@once/chaos';
import { expect, test } from '@playwright/test';
import { startOnceTarget } from '../chaos/once-target.ts';
import { parseChaosArgs, replayCommand } from '../chaos/profiles.ts';

/**
 * The `ci` chaos profile inside `npm test`: >= 120 checkouts (>= 20 in this browser),
 * >= 30 faults covering every kind, then the checker over the history and both databases.
 * "No violation" alone passes a run that did nothing, so the run must also show its work:
 * every fault kind bit (a processor fault consumed, a storm terminated backends), no client
 * crashed, and each of the profile's floors (`PROFILES.ci.floors`: payments made, browser
 * customers started and paid, ok answers, kills inside an ambiguity window, committed lost
 * responses, lease takeovers, expiries crossed, a capture and refunds by the operator's
 * money flows) was reached.
 * The seed is fixed ({@link CI_SEED}) so `npm test` is reproducible: the same plan every
 * run (only process timing differs). ONCE_CHAOS_SEED runs another seed; a random search
 * belongs to `npm run chaos`. A failure names the exact `npm run chaos` command that
 * replays it, and attaches the report and timeline.
 */
const CI_SEED = 1;
/**
 * A run that did less than its floors with no violation and no crashed client is
 * inconclusive, not a failure of Once (a loaded machine started fewer browser customers, a
 * fault met no checkout): it runs once more, same seed, on a fresh system. A violation or a
 * crashed client fails at once; a second inconclusive run fails.
 */
const MAX_RUNS = 2;

test('ci chaos profile: nobody charged twice, nothing lost or stuck, every fault kind bit, the work the floors ask for done', async ({
  browser,
}, testInfo) => {
  // A run takes about 3-5 minutes; a busy shared machine slows every restart.
  test.setTimeout(MAX_RUNS * 540_000);
  const seed = process.env.ONCE_CHAOS_SEED ?? String(CI_SEED);
  const args = parseChaosArgs(['--profile', 'ci', '--seed', seed]);
  expect(args.profile.floors, 'the ci profile names its floors').toBeDefined();
  for (let run = 1; run <= MAX_RUNS; run++) {
    const result = await runOnce(run);
    const inconclusive =
      result.check.violations.length === 0 &&
      result.clientCrashes.length === 0 &&
      (result.shortfalls.length > 0 || result.coverage.neverFired.length > 0);
    if (inconclusive && run < MAX_RUNS) {
      console.log(
        `chaos: run ${run} inconclusive (${[...result.shortfalls, ...result.coverage.neverFired.map((k) => `${k} never bit`)].join('; ')}): once more`,
      );
      continue;
    }
    const failure = `${result.markdown}\n\nReplay: ${result.replay}`;
    expect(
      result.clientCrashes,
      `clients crashed: ${result.clientCrashes.join('; ')}\n${failure}`,
    ).toEqual([]);
    expect(
      result.check.violations,
      `${result.check.violations.length} violations, first: ${result.check.violations[0]?.kind} ${result.check.violations[0]?.detail}\n${failure}`,
    ).toEqual([]);
    expect(
      result.shortfalls,
      `the run did less than its floors in ${run} runs: ${result.shortfalls.join('; ')}\n${failure}`,
    ).toEqual([]);
    expect(
      result.coverage.neverFired,
      `fault kinds that never bit in ${run} runs: ${result.coverage.neverFired.join(', ')}\n${failure}`,
    ).toEqual([]);
    return;
  }

  async function runOnce(run: number) {
    console.log(
      `chaos: seed ${args.seed}, run ${run} (replay: npm run chaos -- --seed ${args.seed} --profile ci)`,
    );
    const logs: string[] = [];
    const target = await startOnceTarget({
      profile: args.profile,
      browser,
      log: (line) => {
        logs.push(line);
        if (logs.length > 4000) logs.shift();
      },
    });
    const outDir = testInfo.outputPath(`chaos-run-${run}`);
    try {
      const result = await runChaos(args, target, {
        outDir,
        replay: replayCommand(args),
        log: () => {},
      });
      for (const file of ['report.md', 'timeline.svg', 'history.jsonl']) {
        await testInfo.attach(`run-${run}-${file}`, { path: path.join(outDir, file) });
      }
      console.log(result.markdown.split('## Violations')[0]);
      return result;
    } finally {
      await testInfo.attach(`run-${run}-system.log`, { body: logs.join('\n') });
      await target.stop();
    }
  }
});
