import { integer, parseEnv } from '@once/env';
import { expect, test } from '@playwright/test';
import { repoRoot } from '../../scripts/system/start-system.ts';
import {
  patchApplies,
  plantedBugs,
  preparePlantedCopy,
  removePlantedCopy,
  runChaosIn,
} from '../chaos/planted/planted-bugs.ts';

/**
 * Proof the checker can fail. Always: every planted bug's patch still applies to this tree
 * (a patch that no longer applies fails). With ONCE_CHAOS_PLANTED=1 (minutes per bug, so
 * not inside every `npm test`): each bug, applied to a temporary copy, must make the ci
 * profile report a violation within ONCE_CHAOS_PLANTED_SEEDS seeds (default 10).
 */
const bugs = plantedBugs();

test('there are planted bugs to prove the checker with', () => {
  expect(bugs.map((b) => b.name).length).toBeGreaterThanOrEqual(6);
});

for (const bug of bugs) {
  test(`planted bug "${bug.name}": the patch applies to this tree`, () => {
    const result = patchApplies(bug, repoRoot);
    expect(result.ok, `${bug.patchFile} no longer applies; refresh it:\n${result.error}`).toBe(
      true,
    );
  });

  test(`planted bug "${bug.name}": the ci profile reports a violation`, async () => {
    test.skip(!process.env.ONCE_CHAOS_PLANTED, 'set ONCE_CHAOS_PLANTED=1 to run (minutes per bug)');
    const { ONCE_CHAOS_PLANTED_SEEDS: seeds } = parseEnv(
      { ONCE_CHAOS_PLANTED_SEEDS: integer({ default: 10, min: 1 }) },
      process.env,
    );
    test.setTimeout(seeds * 420_000 + 300_000);
    const copy = preparePlantedCopy(bug, repoRoot);
    try {
      const tried: string[] = [];
      for (let seed = 1; seed <= seeds; seed++) {
        const result = await runChaosIn(copy, ['--seed', String(seed), '--profile', 'ci']);
        const found = /^chaos: result: [1-9]\d* violation/m.test(result.output);
        tried.push(`seed ${seed}: exit ${result.code}`);
        if (result.code === 1 && found) return;
      }
      throw new Error(`${bug.name} was not caught within ${seeds} seeds: ${tried.join('; ')}`);
    } finally {
      removePlantedCopy(copy);
    }
  });
}
