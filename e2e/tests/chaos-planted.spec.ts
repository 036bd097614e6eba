import { integer, parseEnv } from '@once/env';
import { repoRoot } from '@once/scripts/start-system';
import { expect, test } from '@playwright/test';
import {
  patchApplies,
  plantedBugs,
  preparePlantedCopy,
  provesBug,
  removePlantedCopy,
  runChaosIn,
  violationKindsIn,
} from '../chaos/planted/planted-bugs.ts';

/**
 * Proof the checker can fail. Always: every planted bug's patch still applies to this tree
 * (a patch that no longer applies fails). With ONCE_CHAOS_PLANTED=1 (minutes per bug, so
 * not inside every `npm test`): each bug, applied to a temporary copy, must make the ci
 * profile report a violation that proves it (one of its `provedBy` kinds; any other
 * violation does not count) within ONCE_CHAOS_PLANTED_SEEDS seeds (default 10);
 * ONCE_CHAOS_PLANTED_BUGS=name,name limits that to the bugs named.
 */
const bugs = plantedBugs();

test('there are planted bugs to prove the checker with', () => {
  expect(bugs.map((b) => b.name).length).toBeGreaterThanOrEqual(8);
  // One per money path of the operator: a refund, a capture.
  expect(bugs.map((b) => b.name)).toEqual(
    expect.arrayContaining(['refund-without-downstream-key', 'capture-fresh-key-on-retry']),
  );
});

test('a planted bug is caught only by a violation that proves it', () => {
  const byName = new Map(bugs.map((b) => [b.name, b]));
  const noKey = byName.get('no-downstream-key')!;
  const newKey = byName.get('ui-new-key-on-retry')!;
  expect(noKey.provedBy).toEqual(['double_charge']);
  const out = (line: string) => `...\nchaos: result: ${line}\nchaos: FAILED`;
  expect(violationKindsIn(out('2 violation(s) (money_not_conserved, process_died)'))).toEqual([
    'money_not_conserved',
    'process_died',
  ]);
  expect(violationKindsIn(out('0 violation(s)'))).toEqual([]);
  expect(provesBug(noKey, ['money_not_conserved', 'process_died'])).toBe(false);
  expect(provesBug(noKey, ['shown_disagrees_with_ledger', 'double_charge'])).toBe(true);
  expect(provesBug(newKey, ['duplicate_payment'])).toBe(true);
  expect(provesBug(newKey, ['not_terminal'])).toBe(false);
});

for (const bug of bugs) {
  test(`planted bug "${bug.name}": the patch applies to this tree`, () => {
    const result = patchApplies(bug, repoRoot);
    expect(result.ok, `${bug.patchFile} no longer applies; refresh it:\n${result.error}`).toBe(
      true,
    );
  });

  test(`planted bug "${bug.name}": the ci profile reports ${bug.provedBy.join(' or ')}`, async () => {
    test.skip(!process.env.ONCE_CHAOS_PLANTED, 'set ONCE_CHAOS_PLANTED=1 to run (minutes per bug)');
    const only = process.env.ONCE_CHAOS_PLANTED_BUGS?.split(',').filter(Boolean);
    test.skip(only !== undefined && !only.includes(bug.name), 'not in ONCE_CHAOS_PLANTED_BUGS');
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
        const kinds = violationKindsIn(result.output);
        tried.push(`seed ${seed}: exit ${result.code} (${kinds.join(', ') || 'no violation'})`);
        if (result.code === 1 && provesBug(bug, kinds)) return;
      }
      throw new Error(`${bug.name} was not caught within ${seeds} seeds: ${tried.join('; ')}`);
    } finally {
      removePlantedCopy(copy);
    }
  });
}
