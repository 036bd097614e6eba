// `tsx scripts/ha/main.ts [--mode async|sync|strict] [--drill]`: installs what is missing
// (apt-get), starts the 3-node Patroni cluster and prints the multi-host DATABASE_URL; Ctrl-C
// stops it. `--drill` instead runs every failure once against a counter table and exits 1 when
// the cluster does not come back with its acknowledged rows (scripts/ha/drill.ts).
import { parseArgs } from 'node:util';
import { startHaCluster } from './cluster.ts';
import { runDrill } from './drill.ts';
import { REPLICATION_MODES, type ReplicationMode } from './patroni-config.ts';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'sync' },
    drill: { type: 'boolean', default: false },
    'base-port': { type: 'string', default: '24000' },
  },
});
const mode = values.mode as ReplicationMode;
if (!REPLICATION_MODES.includes(mode)) {
  console.error(`--mode must be one of ${REPLICATION_MODES.join(', ')}`);
  process.exit(2);
}
const log = (line: string) => console.log(`[ha ${new Date().toISOString().slice(11, 23)}] ${line}`);
process.on('unhandledRejection', (reason) => log(`unhandled rejection: ${String(reason)}`));
const cluster = await startHaCluster({ mode, basePort: Number(values['base-port']), log });
await cluster.createDatabase('once');

if (values.drill) {
  let failed = false;
  try {
    await runDrill(cluster, log);
  } catch (error) {
    failed = true;
    log(`drill failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  await cluster.stop({ keep: failed });
  process.exit(failed ? 1 : 0);
} else {
  log(`DATABASE_URL=${cluster.url('once')}`);
  log(`logs and data: ${cluster.dir}; Ctrl-C stops the cluster`);
  const stop = () => void cluster.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
