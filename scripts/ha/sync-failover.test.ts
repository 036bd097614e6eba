// The seeded synchronous failover run of `npm test` (issue 27; the matrix of modes and seeds is
// on demand: `npm run ha -- --app-drill`). A real three-node Patroni cluster in sync mode, the
// real web, worker and processor on its multi-host URL, checkout traffic retried by key while
// the primary is killed -9, then cut off from its standbys with COMMITs waiting for the
// synchronous one, those waits terminated and the primary killed (a switchover as well would
// cost the old primary's rejoin and about 20 s more). Afterwards no acknowledged payment may be
// missing from the new primary, and the processor's ledger must hold exactly one charge per
// checkout.
import { findFreePort } from '@once/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAppDrill } from './app-drill.ts';
import { type HaCluster, startHaCluster } from './cluster.ts';
import { haPackagesInstalled } from './install.ts';

const installed = haPackagesInstalled();
if (!installed) {
  const line =
    'sync failover test: PostgreSQL 15, Patroni or etcd is not installed; .ci/run installs ' +
    'them (apt-get), as does `npm run ha` once';
  // CI installs them (.ci/run): missing there is a failure, elsewhere a skip that says why.
  if (process.env.CI) throw new Error(line);
  console.warn(`${line}: skipped`);
}

describe.skipIf(!installed)('a seeded synchronous failover under checkout traffic', () => {
  const lines: string[] = [];
  const log = (line: string) => lines.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
  let cluster: HaCluster;

  beforeAll(async () => {
    // Eight consecutive ports (etcd, PostgreSQL, Patroni's REST API), drawn at random: the
    // chaos suite's failover profile may start a cluster at the same time.
    const basePort = await findFreePort({ count: 8 });
    cluster = await startHaCluster({ mode: 'sync', basePort, log });
    await cluster.createDatabase('once');
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('loses no acknowledged payment and charges every shopper once', async () => {
    const outcome = await runAppDrill(cluster, log, {
      seed: 1,
      faults: ['kill -9', 'terminated COMMIT waits'],
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${lines.join('\n')}`);
    });
    const context = lines.join('\n');
    expect(outcome.acknowledged, context).toBeGreaterThan(0);
    // A terminated COMMIT wait that never happened proves nothing.
    expect(outcome.terminatedWaits, context).toBeGreaterThan(0);
    expect(outcome.lost, context).toBe(0);
    expect(outcome.unanswered, context).toBe(0);
    expect(outcome.recreated, context).toBe(0);
    // Double charges, missing charges, payments not converged to the ledger: none.
    expect(outcome.violations, context).toEqual([]);
  }, 240_000);
});
