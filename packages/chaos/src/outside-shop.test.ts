// The kit as a team gets it, against a service it was not written for: `npm pack` of the kit,
// installed by the outside shop's own project (examples/outside-shop, copied outside the
// workspace), whose `once-chaos` bin runs in black-box mode against the shop on real
// PostgreSQL, charging our mock processor through the Stripe SDK. The kit's second fault proxy
// sits between the shop and the processor (the shop's STRIPE_URL points at its port, as a team
// would set it in CI), so processor answers get lost too. Each run is one seed of 3 s.
//
// Seed 5 is chosen for what it draws, whatever the timing: the proxy draws a processor call's
// fault from its body (the order's key, the run's prefix stripped) and how often that body was
// sent, so operation 0 (which every run starts at once) loses the answers to its first charge
// and to the Stripe SDK's own retry of it: the SDK gives up, the shop answers 503, and the
// client's retry charges again unless the shop passes a key of its own downstream.
//
// `ONCE_CHAOS_SEARCH=1` adds the long run: each bug switch on its own, seeds 1-10 until the
// violation that names it comes, and every switch off for all 10 (docs/chaos.md has its table).
import { cp, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEmptyTestDatabase, type EmptyTestDatabase } from '@once/postgres/testing';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import { type PackedPackage, packPackage, run, startConsumerServer } from '@once/scripts/pack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBlackBox } from './black-box.ts';
import { onceProcessorLedger } from './ledger.ts';
import type { ViolationKind } from './violations.ts';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const exampleDir = path.resolve(packageDir, '../../examples/outside-shop');
const SEED = 5;
/** The monorepo's `@once/source` condition stays out: the installed kit runs its build. */
const outsideEnv = (extra: Record<string, string> = {}) => ({
  ...process.env,
  NODE_OPTIONS: '',
  ...extra,
});

let processorDatabase: ProcessorTestDatabase;
let processor: RunningProcessor;
let packed: PackedPackage;
/** The shop's project, as its README installs it: the kit from the tarball beside it. */
let projectDir: string;
const shopDatabases: EmptyTestDatabase[] = [];

beforeAll(async () => {
  processorDatabase = await createProcessorTestDatabase('chaos_kit');
  processor = await startTestProcessor({ databaseUrl: processorDatabase.url });
  packed = await packPackage(packageDir);
  projectDir = packed.tempDir;
  await cp(exampleDir, projectDir, {
    recursive: true,
    filter: (source) => !/node_modules|\.tgz$|report\.md$|junit\.xml$/.test(source),
  });
  await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'],
    { cwd: projectDir, env: outsideEnv() },
  );
}, 240_000);

afterAll(async () => {
  await processor?.stop();
  await processorDatabase?.drop();
  for (const database of shopDatabases) await database.drop();
  await packed?.dispose();
});

/** The shop started as its README starts it (`SHOP_BUG_*` switches on), stopped after `use`. */
async function withShop<T>(
  bugs: string[],
  use: (shopUrl: string, downstreamPort: number) => Promise<T>,
): Promise<T> {
  const database = await createEmptyTestDatabase('outside_shop');
  shopDatabases.push(database);
  const downstreamPort = await freePort();
  const shop = await startConsumerServer(
    projectDir,
    ['--import', 'tsx', 'main.ts'],
    outsideEnv({
      DATABASE_URL: database.url,
      STRIPE_URL: `http://127.0.0.1:${downstreamPort}`,
      PORT: '0',
      ...Object.fromEntries(bugs.map((bug) => [bug, '1'])),
    }),
  );
  try {
    return await use(shop.baseUrl, downstreamPort);
  } finally {
    await shop.stop();
  }
}

/** The installed `once-chaos` bin as CI runs it (README, "In CI"); its exit code and files. */
async function runCli(shopUrl: string, downstreamPort: number, seed = SEED) {
  const args = [
    ...['--target', shopUrl, '--seed', String(seed), '--duration', '3s', '--preset', 'ietf'],
    ...['--downstream', processor.url, '--downstream-port', String(downstreamPort)],
    ...['--ledger', `${processor.url}/admin/ledger?account=acct_tenant_a`],
    ...['--ledger-key', 'metadata.checkout_key', '--report', 'report.md', '--junit', 'junit.xml'],
  ];
  const bin = path.join(projectDir, 'node_modules/.bin/once-chaos');
  const env = outsideEnv({ ONCE_CHAOS_LEDGER_TOKEN: 'once-admin' });
  const code = await run(bin, args, { cwd: projectDir, env }).then(
    () => 0,
    (error: { code?: number }) => error.code ?? null,
  );
  return {
    code,
    report: await readFile(path.join(projectDir, 'report.md'), 'utf8'),
    junit: await readFile(path.join(projectDir, 'junit.xml'), 'utf8'),
  };
}

describe('once-chaos, installed from its tarball, in black-box mode against the outside shop', () => {
  it('exits 1 naming double_charge when the shop sends no downstream key to the processor', async () => {
    const { code, report, junit } = await withShop(['SHOP_BUG_NO_DOWNSTREAM_KEY'], runCli);
    expect(report, report).toMatch(/- key `once-chaos-5-[0-9a-f]{8}-0`: [2-9] charges/);
    expect(junit).toMatch(/name="double_charge">\s*<failure/);
    expect(code).toBe(1);
  });

  it('exits 0 with every bug switched off, under the same seed and faults', async () => {
    const { code, report, junit } = await withShop([], runCli);
    expect(report).toMatch(/\| drop_answer \(processor side\) \| [1-9]/);
    expect(report).toMatch(/\| ledger charges read \| [1-9]/);
    expect(report, report).toContain('## Violations\n\nNone.');
    expect(junit).not.toContain('<failure');
    expect(code).toBe(0);
  });

  it('reports in_flight_not_rejected from code (runBlackBox) when the shop checks the key, then acts', async () => {
    const result = await withShop(['SHOP_BUG_CHECK_THEN_ACT'], (target, port) =>
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

/** Each switch and the violation that names its bug. */
const SWITCHES: [string, ViolationKind][] = [
  ['SHOP_BUG_CHECK_THEN_ACT', 'in_flight_not_rejected'],
  ['SHOP_BUG_KEY_ON_SUCCESS_ONLY', 'in_flight_not_rejected'],
  ['SHOP_BUG_NO_REPLAY', 'response_not_replayed'],
  ['SHOP_BUG_NO_DOWNSTREAM_KEY', 'double_charge'],
  ['SHOP_BUG_VOLATILE_KEY', 'double_charge'],
];

describe.runIf(process.env.ONCE_CHAOS_SEARCH === '1')('the long run: 10 seeds a switch', () => {
  /** A table row of what one run's report counted: violations, operations, requests, faults. */
  const counted = (report: string) => {
    const row = (label: string) => new RegExp(`\\| ${label}[^|]*\\| (\\d+)`).exec(report)?.[1];
    const faults = (side: string) =>
      [...report.matchAll(new RegExp(`\\| \\w+${side} \\| (\\d+) \\|`, 'g'))]
        .map((m) => Number(m[1]))
        .reduce((a, b) => a + b, 0);
    return [
      [...report.matchAll(/### (\w+) \((\d+)\)/g)].map((m) => `\`${m[1]}\` (${m[2]})`).join(', ') ||
        'none',
      row('operations'),
      `${row('client requests')} / ${row('requests that reached')}`,
      `${faults('')} + ${faults(' \\(processor side\\)')}`,
    ].join(' | ');
  };

  for (const [bug, kind] of SWITCHES) {
    it(`finds ${bug} by ${kind} within 10 seeds (and says in how many)`, async () => {
      const found: number[] = [];
      for (let seed = 1; seed <= 10; seed++) {
        const { code, report } = await withShop([bug], (url, port) => runCli(url, port, seed));
        console.log(`| \`${bug}\` | ${seed}: exit ${code} | ${counted(report)} |`);
        if (report.includes(`### ${kind} (`)) found.push(seed);
      }
      console.log(`${bug}: ${kind} at seeds ${found.join(', ') || 'none'}`);
      expect(found.length).toBeGreaterThan(0);
    }, 900_000);
  }

  it('passes every seed with every switch off', async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const { code, report } = await withShop([], (url, port) => runCli(url, port, seed));
      console.log(`| none | ${seed}: exit ${code} | ${counted(report)} |`);
      expect(report, report).toContain('## Violations\n\nNone.');
    }
  }, 900_000);
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
