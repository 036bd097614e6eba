import { spawnEmbeddedPostgres } from '@once/postgres/embedded';
import { HaCluster } from '../ha/cluster.ts';
import { type ClusterControl, clusterControl } from './cluster-parts.ts';

/** A cluster takes this many ports from its base: etcd 2, PostgreSQL 3, Patroni's REST API 3. */
export const CLUSTER_PORT_COUNT = 8;

export interface ReplicatedDatabase {
  /** The apps' multi-host URL (`target_session_attrs=primary`). */
  databaseUrl: string;
  /** The processor's own embedded PostgreSQL: the third party never fails over with us. */
  processorDatabaseUrl: string;
  /** What the cockpit's Parts and "Fail over the database" act on. */
  control: ClusterControl;
  /** Where the cluster's logs and data are (removed by `stop`). */
  dir: string;
}

/**
 * `npm run demo -- --ha`'s database: the three-node Patroni cluster of scripts/ha in synchronous
 * mode, and the processor's ledger on an embedded PostgreSQL of its own. `stop` may be called
 * at any time, even while it starts: it kills whatever has started and removes its directory.
 */
export function replicatedDatabase(options: { basePort: number; log: (line: string) => void }) {
  // Made by `start` only: it makes the cluster's directory, which a launcher that fails
  // before (a port taken) must not leave behind.
  let cluster: HaCluster | undefined;
  let processor: Awaited<ReturnType<typeof spawnEmbeddedPostgres>> | undefined;
  // However the launcher ends short of SIGKILL, the nodes end with it (`cluster.stop` kills
  // before its first await); a SIGKILLed launcher's cluster is stopped by its tether.
  const stopOnExit = () => void cluster?.stop();
  return {
    async start(): Promise<ReplicatedDatabase> {
      cluster = new HaCluster({ mode: 'sync', basePort: options.basePort, log: options.log });
      process.once('exit', stopOnExit);
      try {
        await cluster.start();
      } catch (error) {
        // Its logs stay: the error names their folder.
        process.off('exit', stopOnExit);
        await cluster.stop({ keep: true });
        cluster = undefined;
        throw error;
      }
      await cluster.createDatabase('once');
      processor = await spawnEmbeddedPostgres({ durability: 'fast', databases: ['processor'] });
      return {
        databaseUrl: cluster.url('once'),
        processorDatabaseUrl: processor.databaseUrl('processor'),
        control: clusterControl(cluster, options.log),
        dir: cluster.dir,
      };
    },
    async stop(): Promise<void> {
      process.off('exit', stopOnExit);
      await processor?.stop();
      await cluster?.stop();
    },
  };
}
