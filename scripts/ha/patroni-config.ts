// One Patroni node's configuration (Debian's Patroni 3.0.2), written as JSON (which is YAML).
import { POSTGRES_BIN_DIR } from './install.ts';

/**
 * - `async`: Patroni's default; a failover may lose commits the standby had not received.
 * - `sync`: `synchronous_mode`; Patroni names one synchronous standby (`synchronous_node_count`
 *   1 over two standbys: 3.0.2 has no quorum commit) and promotes only it; with no standby
 *   left it turns synchronous replication off and writes go on.
 * - `strict`: `synchronous_mode_strict` as well; with no synchronous standby, writes wait.
 */
export type ReplicationMode = 'async' | 'sync' | 'strict';

export const REPLICATION_MODES: readonly ReplicationMode[] = ['async', 'sync', 'strict'];

/** The cluster's passwords: loopback only, a throw-away cluster. */
export const HA_PASSWORDS = {
  superuser: 'once-ha-super',
  replication: 'once-ha-repl',
  rewind: 'once-ha-rewind',
};

export interface HaTimings {
  /** Leader lock TTL, s: how long a silent primary keeps the lock before a standby may take it. */
  ttl: number;
  /** Patroni's loop, s. */
  loopWait: number;
  /** DCS and PostgreSQL retries, s; Patroni needs loop_wait + 2 * retry_timeout <= ttl. */
  retryTimeout: number;
}

/** Fast enough for a chaos run (a lost primary is replaced in about ttl + loop_wait seconds). */
export const CHAOS_TIMINGS: HaTimings = { ttl: 10, loopWait: 2, retryTimeout: 4 };

export interface PatroniNodeConfig {
  scope: string;
  name: string;
  pgPort: number;
  restPort: number;
  etcdPort: number;
  dataDir: string;
  /** Where the node's unix socket and pgpass live (a directory its OS user owns). */
  runDir: string;
  mode: ReplicationMode;
  timings: HaTimings;
}

export function patroniConfig(node: PatroniNodeConfig): Record<string, unknown> {
  const { ttl, loopWait, retryTimeout } = node.timings;
  if (loopWait + 2 * retryTimeout > ttl) {
    throw new Error(
      `loop_wait + 2 * retry_timeout must not exceed ttl (${loopWait}, ${retryTimeout}, ${ttl})`,
    );
  }
  return {
    scope: node.scope,
    name: node.name,
    restapi: {
      listen: `127.0.0.1:${node.restPort}`,
      connect_address: `127.0.0.1:${node.restPort}`,
    },
    // etcd's v2 protocol (etcd runs with --enable-v2), not `etcd3`: Patroni 3.0.2 renews its
    // leader key over v3 with an unconditional put (fixed in 3.0.3, patroni#2693), so a primary
    // resumed after SIGSTOP overwrote the new leader's key and took the cluster back, leaving
    // the promoted node on a newer timeline it could not leave. Over v2 the renewal is a
    // compare-and-swap on its own name (prevValue) and the resumed node demotes.
    etcd: { hosts: [`127.0.0.1:${node.etcdPort}`] },
    bootstrap: {
      // Written to etcd by the first node: the cluster-wide (dynamic) configuration.
      dcs: {
        ttl,
        loop_wait: loopWait,
        retry_timeout: retryTimeout,
        maximum_lag_on_failover: 1048576,
        synchronous_mode: node.mode !== 'async',
        synchronous_mode_strict: node.mode === 'strict',
        synchronous_node_count: 1,
        postgresql: {
          // An old primary rejoins as a standby by rewinding its forked timeline (needs
          // data checksums or wal_log_hints; initdb below turns checksums on).
          use_pg_rewind: true,
          use_slots: true,
          parameters: { max_connections: 200, wal_log_hints: 'on', wal_keep_size: '256MB' },
        },
      },
      initdb: [{ encoding: 'UTF8' }, 'data-checksums'],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: POSTGRES_BIN_DIR,
      pgpass: `${node.runDir}/pgpass-${node.name}`,
      authentication: {
        superuser: { username: 'postgres', password: HA_PASSWORDS.superuser },
        replication: { username: 'replicator', password: HA_PASSWORDS.replication },
        rewind: { username: 'rewinder', password: HA_PASSWORDS.rewind },
      },
      parameters: { unix_socket_directories: node.runDir },
      pg_hba: [
        'local all all trust',
        'host replication replicator 127.0.0.1/32 md5',
        'host all all 127.0.0.1/32 md5',
      ],
    },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}
