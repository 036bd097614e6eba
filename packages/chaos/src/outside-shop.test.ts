// The kit in black-box mode against a service it was not written for: the outside shop
// (examples/outside-shop), on real PostgreSQL, charging our mock processor through the
// Stripe SDK. A second fault proxy sits between the shop and the processor (the shop's SDK
// points at it, as a team would set STRIPE_URL in CI), so processor answers get lost too.
import { createEmptyTestDatabase, type EmptyTestDatabase } from '@once/postgres/testing';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ShopBugs, startShop } from '../examples/outside-shop/shop.ts';
import { type FaultProxy, startFaultProxy } from './fault-proxy.ts';
import { onceProcessorLedger } from './ledger.ts';
import { junitReport, markdownReport } from './report.ts';
import { runChaos } from './run-chaos.ts';

let processorDatabase: ProcessorTestDatabase;
let processor: RunningProcessor;
const shopDatabases: EmptyTestDatabase[] = [];

beforeAll(async () => {
  processorDatabase = await createProcessorTestDatabase('chaos_kit');
  processor = await startTestProcessor({ databaseUrl: processorDatabase.url });
});

afterAll(async () => {
  await processor?.stop();
  await processorDatabase?.drop();
  for (const database of shopDatabases) await database.drop();
});

/** One short seeded run of the kit against a fresh shop with `bugs` switched on. */
async function chaosAgainstShop(bugs: ShopBugs, seed: number) {
  const database = await createEmptyTestDatabase('outside_shop');
  shopDatabases.push(database);
  let downstream: FaultProxy | undefined;
  let shop: Awaited<ReturnType<typeof startShop>> | undefined;
  try {
    downstream = await startFaultProxy({
      upstream: processor.url,
      seed,
      mix: { drop_answer: 0.2, delay: 0.1 },
    });
    shop = await startShop({
      databaseUrl: database.url,
      stripeUrl: downstream.url,
      stripeSecretKey: 'sk_test_tenant_a',
      bugs,
    });
    const result = await runChaos({
      target: shop.url,
      seed,
      durationMs: 3_000,
      preset: 'ietf',
      ledger: onceProcessorLedger({
        url: `${processor.url}/admin/ledger?account=acct_tenant_a`,
        token: 'once-admin',
        keyField: 'metadata.checkout_key',
      }),
    });
    return { result, downstreamFaults: downstream.faults };
  } finally {
    await shop?.stop();
    await downstream?.close();
  }
}

describe('once-chaos in black-box mode against the outside shop', () => {
  it('reports double_charge when the shop sends no downstream key to the processor', async () => {
    const { result, downstreamFaults } = await chaosAgainstShop({ noDownstreamKey: true }, 1);
    expect(downstreamFaults.drop_answer).toBeGreaterThan(0);
    expect(result.violations.map((v) => v.name)).toContain('double_charge');
    expect(markdownReport(result)).toContain('### double_charge');
    expect(junitReport(result)).toMatch(/name="double_charge">\s*<failure/);
  });

  it('reports in_flight_not_rejected when the shop checks the key, then acts', async () => {
    const { result } = await chaosAgainstShop({ checkThenAct: true }, 1);
    expect(result.violations.map((v) => v.name)).toContain('in_flight_not_rejected');
  });

  it('passes the shop with every bug switched off, under the same seed and faults', async () => {
    const { result, downstreamFaults } = await chaosAgainstShop({}, 1);
    expect(downstreamFaults.drop_answer).toBeGreaterThan(0);
    expect(result.faults.drop_answer + result.faults.duplicate_at_once).toBeGreaterThan(0);
    expect(result.charges).toBeGreaterThan(0);
    expect(result.violations).toEqual([]);
    expect(junitReport(result)).not.toContain('<failure');
  });
});
