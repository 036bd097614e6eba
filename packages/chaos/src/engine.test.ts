// runChaos against a target whose processor charged nothing: without floors of its own (a
// profile resized on the command line drops them), such a run must still fail for proving too
// little, never pass because nothing happened.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChaos } from './engine.ts';
import type { ChaosProfile } from './schedule.ts';
import type { ChaosTarget, LedgerEntry } from './target.ts';

const profile: ChaosProfile = {
  name: 'tiny',
  intents: 1,
  browserIntents: 0,
  durationMs: 50,
  nemesisEvents: 0,
  faults: [],
  workers: 1,
  browserConcurrency: 1,
  convergeTimeoutMs: 1_000,
  env: {},
  moneyFlows: { manualShare: 0, refundShare: 0, faults: 0 },
};

/** A target whose clients send nothing and whose processor's ledger holds `ledger`. */
function targetWithLedger(ledger: LedgerEntry[]): ChaosTarget {
  const nothing = async () => {};
  return {
    clients: { http: nothing },
    catalogues: [
      {
        tenantId: 'tenant_a',
        apiKey: 'key',
        processorAccountId: 'acct_a',
        products: [{ id: 'p', unitAmount: 100 }],
      },
    ],
    workerNames: ['worker-1'],
    leaseMs: 1_000,
    processorTimeoutMs: 1_000,
    reconcileAfterMs: 1_000,
    keyTtlMs: 60_000,
    webUrl: 'http://127.0.0.1:1',
    kill: nothing,
    restart: nothing,
    pause: async () => undefined,
    resume: nothing,
    crashRestartDatabase: nothing,
    terminateBackends: async () => 0,
    armProcessorFault: async () => undefined,
    heal: nothing,
    pendingPayments: async () => 0,
    snapshot: async () => ({ payments: [], ledger, backstage: [], counters: {} }),
    onUnexpectedExit: () => {},
    stop: nothing,
  };
}

const run = (target: ChaosTarget) =>
  runChaos({ seed: 1, profile }, target, {
    outDir: mkdtempSync(path.join(tmpdir(), 'once-chaos-engine-')),
    log: () => {},
  });

describe('a run that charged nothing', () => {
  it('fails for proving too little, with no floor in its profile', async () => {
    const result = await run(targetWithLedger([]));
    expect(result.check.violations).toEqual([]);
    expect(result.shortfalls).toEqual(['charges 0 < 1']);
    expect(result.markdown).toContain('FAIL: no violation, but the run proves too little');
  });

  it('is not failed for it once the ledger holds a charge', async () => {
    const charge: LedgerEntry = {
      kind: 'charge',
      accountId: 'acct_a',
      tenantId: 'tenant_a',
      paymentId: null,
      amount: 100,
      paymentIntentId: 'pi_1',
      createdAt: Date.now(),
    };
    const result = await run(targetWithLedger([charge]));
    expect(result.shortfalls).toEqual([]);
  });
});
