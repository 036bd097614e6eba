// `npm run ha -- [--mode async|sync|strict] [--drill [--rounds N] [--seed N]]`:
// installs what is missing (apt-get), starts the 3-node Patroni cluster and prints the
// multi-host DATABASE_URL; Ctrl-C stops it. `--drill` instead runs every failure `rounds` times
// under acknowledged inserts (scripts/ha/drill.ts), prints one line per mode for the matrix in
// docs/high-availability.md, and exits 1 when a synchronous mode lost an acknowledged row or
// the cluster did not come back. `--app-drill` runs the failures under checkout traffic
// through the real apps (scripts/ha/app-drill.ts) and exits 1 on a double charge or, in a
// synchronous mode, on a lost acknowledged payment.
import { parseArgs } from 'node:util';
import { runAppDrill } from './app-drill.ts';
import { startHaCluster } from './cluster.ts';
import { runDrill } from './drill.ts';
import { REPLICATION_MODES, type ReplicationMode } from './patroni-config.ts';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'sync' },
    drill: { type: 'boolean', default: false },
    'app-drill': { type: 'boolean', default: false },
    'base-port': { type: 'string', default: '24000' },
    rounds: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
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

if (values['app-drill']) {
  let failed = false;
  try {
    const outcome = await runAppDrill(cluster, log, {
      rounds: Number(values.rounds),
      seed: Number(values.seed),
    });
    log(
      `app matrix ${mode} seed ${values.seed}: ${outcome.acknowledged} payments acknowledged, ` +
        `${outcome.lost} lost, ${outcome.recreated} re-created by the retry, ` +
        `${outcome.unanswered} unanswered, ${outcome.terminatedWaits} COMMIT waits terminated, ` +
        `${outcome.violations.length} invariant violations`,
    );
    for (const violation of outcome.violations) log(`violation: ${violation}`);
    failed =
      outcome.violations.some((v) => v.startsWith('double_charge')) ||
      (mode !== 'async' && outcome.lost > 0);
  } catch (error) {
    failed = true;
    log(`app drill failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  await cluster.stop({ keep: failed });
  process.exit(failed ? 1 : 0);
} else if (values.drill) {
  let failed = false;
  try {
    const outcomes = await runDrill(cluster, log, {
      rounds: Number(values.rounds),
      seed: Number(values.seed),
    });
    const lost = outcomes.reduce((n, o) => n + o.lost, 0);
    const gaps = outcomes.map((o) => o.writeGapMs).sort((a, b) => a - b);
    log(
      `matrix ${mode} seed ${values.seed}: ${outcomes.length} failovers, ${lost} acknowledged lost ` +
        `(${
          outcomes
            .filter((o) => o.lost > 0)
            .map((o) => `${o.fault} ${o.lost}`)
            .join(', ') || 'none'
        }), ` +
        `no write acknowledged for median ${gaps[Math.floor(gaps.length / 2)]} ms, max ${gaps.at(-1)} ms`,
    );
    failed = mode !== 'async' && lost > 0;
  } catch (error) {
    failed = true;
    log(`drill failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  await cluster.stop({ keep: failed });
  process.exit(failed ? 1 : 0);
} else {
  log(`DATABASE_URL=${cluster.url('once')}`);
  log(`logs and data: ${cluster.dir}; Ctrl-C stops the cluster`);
  // Says which node is the primary whenever that changes; also keeps this process (the
  // cluster's owner, whose exit must stop it) alive: the nodes' processes are detached.
  let primary: string | undefined;
  const watch = setInterval(async () => {
    const now = await cluster.leader();
    if (now !== primary) log(`primary: ${now ?? 'none'}`);
    primary = now;
  }, 2_000);
  const stop = () => {
    clearInterval(watch);
    void cluster.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
