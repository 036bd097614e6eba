import type { ChaosPart } from '@once/web/demo';
import type { HaCluster, HaNodeName } from '../ha/cluster.ts';
import { CHAOS_TIMINGS } from '../ha/patroni-config.ts';

/** What the control channel acts on of a replicated database: its nodes, and a failover. */
export type ClusterControl = ReturnType<typeof clusterControl>;

/** The cluster cannot take a failover now: no leader, or no synchronous standby yet. */
export class ClusterNotReady extends Error {}

/** Patroni's roles (`leader`, `sync_standby`, `replica`) in the cockpit's words. */
const ROLE_WORDS: Record<string, string> = {
  leader: 'primary',
  sync_standby: 'synchronous standby',
  replica: 'standby',
};

/** Patroni's member states (`running`, `starting`, `stopped`, ...) as a part's state. */
function partState(state: string | undefined): ChaosPart['state'] {
  if (state === 'running' || state === 'streaming') return 'up';
  if (state === undefined || state === 'stopped' || state === 'crashed') return 'down';
  return 'restarting';
}

/**
 * The launcher's side of a Patroni cluster. "Fail over the database" is a kill -9 of the
 * primary, the failure the synchronous mode is there for: Patroni promotes the synchronous
 * standby once the leader key expires, and the killed node restarts to rejoin as a standby.
 */
export function clusterControl(cluster: HaCluster, log: (line: string) => void) {
  const restarts = new Map<string, number>();
  return {
    /** One part per node, with Patroni's view of its state and role (a killed node: `down`). */
    async parts(): Promise<ChaosPart[]> {
      const members = await cluster.members();
      return cluster.nodes.map((name) => {
        // A node the launcher knows is dead is `down`, with no role, whatever the DCS says.
        const member = cluster.isNodeRunning(name)
          ? members.find((m) => m.name === name)
          : undefined;
        return {
          name,
          state: partState(member?.state),
          restarts: restarts.get(name) ?? 0,
          ...(member && ROLE_WORDS[member.role] ? { role: ROLE_WORDS[member.role] } : {}),
        };
      });
    },
    /** Fails the primary; what was done, in words. */
    async failover(): Promise<string> {
      const members = await cluster.members();
      const primary = members.find((m) => m.role === 'leader' && m.state === 'running');
      const standby = members.find((m) => m.role === 'sync_standby' && m.state === 'running');
      if (!primary || !standby) {
        throw new ClusterNotReady(
          'the cluster has no synchronous standby to promote yet (still recovering from the last failover)',
        );
      }
      const old = primary.name as HaNodeName;
      cluster.killNode(old);
      // In the background: the press is answered now, the promotion takes about ttl seconds.
      void cluster
        .waitForLeader(120_000, old)
        .then((next) => {
          log(`${next} promoted; ${old} restarts to rejoin as a standby`);
          restarts.set(old, (restarts.get(old) ?? 0) + 1);
          cluster.startNode(old);
        })
        .catch((error: unknown) => log(`no new primary: ${String(error)}`));
      return (
        `${old} (the primary) killed with SIGKILL; Patroni promotes the synchronous standby ` +
        `${standby.name} within about ${CHAOS_TIMINGS.ttl} s, then ${old} rejoins as a standby`
      );
    },
  };
}
