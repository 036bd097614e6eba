// The kit in black-box mode against a service it was not written for: the outside shop
// (examples/outside-shop), on real PostgreSQL, charging our mock processor through the
// Stripe SDK. The kit's second fault proxy sits between the shop and the processor (the
// shop's SDK points at its port, as a team would set STRIPE_URL in CI), so processor answers
// get lost too. Each run is one seed of 3 s.
//
// Seed 5 is chosen for what it draws, whatever the timing: the proxy draws a processor call's
// fault from its body (the order's key, the run's prefix stripped) and how often that body was
// sent, so operation 0 (which every run starts at once) loses the answers to its first charge
// and to the Stripe SDK's own retry of it: the SDK gives up, the shop answers 503, and the
// client's retry charges again unless the shop passes a key of its own downstream.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEmptyTestDatabase, type EmptyTestDatabase } from '@once/postgres/testing';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ShopBugs, startShop } from '../examples/outside-shop/shop.ts';
import { runBlackBox } from './black-box.ts';
import { onceProcessorLedger } from './ledger.ts';

const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cli.ts');
const SEED = 5;

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

/** A fresh shop with `bugs` on, its SDK pointed at `downstreamPort`, stopped after `use`. */
async function withShop<T>(
  bugs: ShopBugs,
  use: (shopUrl: string, downstreamPort: number) => Promise<T>,
): Promise<T> {
  const database = await createEmptyTestDatabase('outside_shop');
  shopDatabases.push(database);
  const downstreamPort = await freePort();
  const shop = await startShop({
    databaseUrl: database.url,
    stripeUrl: `http://127.0.0.1:${downstreamPort}`,
    stripeSecretKey: 'sk_test_tenant_a',
    bugs,
  });
  try {
    return await use(shop.url, downstreamPort);
  } finally {
    await shop.stop();
  }
}

/** The CLI as CI runs it; its exit code and the files it wrote. */
function runCli(shopUrl: string, downstreamPort: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'once-chaos-'));
  const args = [
    ...['--import', 'tsx', CLI, '--target', shopUrl, '--seed', String(SEED)],
    ...['--duration', '3s', '--preset', 'ietf'],
    ...['--downstream', processor.url, '--downstream-port', String(downstreamPort)],
    ...['--ledger', `${processor.url}/admin/ledger?account=acct_tenant_a`],
    ...['--ledger-key', 'metadata.checkout_key'],
    ...['--report', path.join(dir, 'report.md'), '--junit', path.join(dir, 'junit.xml')],
  ];
  return new Promise<{ code: number | null; report: string; junit: string }>((resolve) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, ONCE_CHAOS_LEDGER_TOKEN: 'once-admin' } },
      (error) => {
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : null) : 0,
          report: readFileSync(path.join(dir, 'report.md'), 'utf8'),
          junit: readFileSync(path.join(dir, 'junit.xml'), 'utf8'),
        });
      },
    );
  });
}

describe('once-chaos in black-box mode against the outside shop', () => {
  it('exits 1 naming double_charge when the shop sends no downstream key to the processor', async () => {
    const { code, report, junit } = await withShop({ noDownstreamKey: true }, runCli);
    expect(report, report).toMatch(/- key `once-chaos-5-[0-9a-f]{8}-0`: [2-9] charges/);
    expect(junit).toMatch(/name="double_charge">\s*<failure/);
    expect(code).toBe(1);
  });

  it('exits 0 with every bug switched off, under the same seed and faults', async () => {
    const { code, report, junit } = await withShop({}, runCli);
    expect(report).toMatch(/\| drop_answer \(processor side\) \| [1-9]/);
    expect(report).toMatch(/\| ledger charges read \| [1-9]/);
    expect(report, report).toContain('## Violations\n\nNone.');
    expect(junit).not.toContain('<failure');
    expect(code).toBe(0);
  });

  it('reports in_flight_not_rejected when the shop checks the key, then acts', async () => {
    const result = await withShop({ checkThenAct: true }, (target, port) =>
      runBlackBox({
        target,
        seed: SEED,
        durationMs: 3_000,
        preset: 'ietf',
        downstream: { upstream: processor.url, port },
        ledger: onceProcessorLedger({
          url: `${processor.url}/admin/ledger?account=acct_tenant_a`,
          token: 'once-admin',
          keyField: 'metadata.checkout_key',
        }),
      }),
    );
    expect(result.violations.map((v) => v.kind)).toContain('in_flight_not_rejected');
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
