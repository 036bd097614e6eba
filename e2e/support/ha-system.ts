import { findFreePort } from '@once/postgres';
import { CLUSTER_PORT_COUNT, replicatedDatabase } from '@once/scripts/replicated-database';
import { type RunningSystem, type SystemOptions, startSystem } from '@once/scripts/start-system';
import { test } from '@playwright/test';
import { E2E_NEXT_DIST_DIR } from './global-setup.ts';

/** The cluster's start (30-45 s) and the system's, with room on a loaded machine. */
const START_TIMEOUT_MS = 300_000;

/**
 * The system as `npm run demo -- --ha` runs it, for one spec: the apps on a throw-away
 * three-node Patroni cluster (synchronous), the processor's ledger on a PostgreSQL of its own,
 * the cockpit's chaos switches on with "Fail over the database". Started before the spec's first
 * test, stopped after its last (the apps first, the cluster last). `ONCE_E2E_LOGS=1` prints
 * every line of the cluster and the parts.
 */
export function useHaTestSystem(options: Partial<SystemOptions> = {}): () => RunningSystem {
  const log = (line: string) => {
    if (process.env.ONCE_E2E_LOGS) console.log(line);
  };
  let database: ReturnType<typeof replicatedDatabase> | undefined;
  let system: RunningSystem | undefined;
  test.beforeAll(async () => {
    test.setTimeout(START_TIMEOUT_MS);
    database = replicatedDatabase({
      // Drawn at random: a chaos run's failover profile may hold a cluster at the same time.
      basePort: await findFreePort({ count: CLUSTER_PORT_COUNT }),
      log: (line) => log(`database  | ${line}`),
    });
    const replicated = await database.start();
    const [webPort, processorPort, workerHealthBasePort] = await Promise.all([
      findFreePort(),
      findFreePort(),
      findFreePort(),
    ]);
    system = await startSystem({
      databaseUrl: replicated.databaseUrl,
      processorDatabaseUrl: replicated.processorDatabaseUrl,
      cluster: replicated.control,
      chaos: true,
      webPort,
      processorPort,
      workerHealthBasePort,
      skipBuild: true,
      nextDistDir: E2E_NEXT_DIST_DIR,
      log,
      ...options,
    });
  });
  test.afterAll(async () => {
    test.setTimeout(START_TIMEOUT_MS);
    await system?.stop();
    await database?.stop();
  });
  return () => {
    if (!system) throw new Error('the HA test system is not running (useHaTestSystem)');
    return system;
  };
}
