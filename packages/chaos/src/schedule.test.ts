// The schedule is a pure function of the seed: a seed printed in a failed run's report must
// replay the same intents and faults after any refactor, so the plan of fixed seeds is pinned.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type ChaosProfile, planRun } from './schedule.ts';
import { SYSTEM_FAULT_KINDS } from './target.ts';

const profile: ChaosProfile = {
  name: 'pinned',
  intents: 40,
  browserIntents: 6,
  durationMs: 60_000,
  nemesisEvents: 12,
  faults: [...SYSTEM_FAULT_KINDS, 'fail_after_charge', 'delay', 'not_found', 'charge_then_drop'],
  workers: 3,
  browserConcurrency: 2,
  convergeTimeoutMs: 30_000,
  env: { PROCESSOR_AUTHORIZATION_WINDOW_MS: '4000' },
  moneyFlows: {
    manualShare: 0.4,
    refundShare: 0.4,
    faults: 4,
    threeDSecureShare: 0.3,
    rudeShare: 0.5,
  },
};

const catalogues = ['tenant_a', 'tenant_b'].map((tenantId, i) => ({
  tenantId,
  apiKey: `key_${i}`,
  processorAccountId: `acct_${i}`,
  products: [
    { id: `p${i}1`, unitAmount: 1_200 },
    { id: `p${i}2`, unitAmount: 350 },
    { id: `p${i}3`, unitAmount: 9_900 },
  ],
}));

const timings = {
  workerNames: ['worker-1', 'worker-2', 'worker-3'],
  leaseMs: 3_000,
  processorTimeoutMs: 2_000,
  reconcileAfterMs: 5_000,
  processorKeyForgetMs: 8_000,
};

const digest = (seed: number) =>
  createHash('sha256')
    .update(JSON.stringify(planRun(seed, profile, catalogues, timings)))
    .digest('hex')
    .slice(0, 16);

describe('planRun', () => {
  it('plans the same run for a seed as it always has', () => {
    expect([1, 2, 42].map(digest)).toEqual([
      '65df412118c29ccf',
      '4a9db995ec9c56b3',
      '942e52bc5b55f4c0',
    ]);
  });

  it('plans every fault kind the profile names, and each intent a key of its seed', () => {
    const plan = planRun(7, profile, catalogues, timings);
    expect(new Set(plan.nemesis.map((n) => n.kind))).toEqual(new Set(profile.faults));
    expect(plan.intents.every((i) => i.key.startsWith('chaos-7-'))).toBe(true);
  });
});
