// `npm run ha -- [--mode async|sync|strict] [--drill | --app-drill] [--rounds N] [--seed N]`:
// installs what is missing (apt-get), starts the 3-node Patroni cluster and prints the
// multi-host DATABASE_URL; Ctrl-C stops it. `--drill` runs every failure under acknowledged
// inserts (drill.ts), `--app-drill` under checkout traffic through the real apps
// (app-drill.ts); each prints one matrix line (docs/high-availability.md) and exits 1 when a
// synchronous mode lost an acknowledged write, or on a double charge.
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

/** Runs a drill, logs its lines and exits; the cluster's folder stays when it failed. */
async function drill(
  name: string,
  run: () => Promise<{ lines: string[]; failed: boolean }>,
): Promise<never> {
  let failed = true;
  try {
    const outcome = await run();
    for (const line of outcome.lines) log(line);
    failed = outcome.failed;
  } catch (error) {
    log(`${name} failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  await cluster.stop({ keep: failed });
  process.exit(failed ? 1 : 0);
}

const drillOptions = { rounds: Number(values.rounds), seed: Number(values.seed) };
if (values['app-drill']) {
  await drill('app drill', async () => {
    const outcome = await runAppDrill(cluster, log, drillOptions);
    return {
      lines: [
        `app matrix ${mode} seed ${values.seed}: ${outcome.acknowledged} payments acknowledged, ` +
          `${outcome.lost} lost, ${outcome.recreated} re-created by the retry, ` +
          `${outcome.unanswered} unanswered, ${outcome.terminatedWaits} COMMIT waits terminated, ` +
          `${outcome.violations.length} invariant violations`,
        ...outcome.violations.map((violation) => `violation: ${violation}`),
      ],
      failed:
        outcome.violations.some((v) => v.startsWith('double_charge')) ||
        (mode !== 'async' && outcome.lost > 0),
    };
  });
} else if (values.drill) {
  await drill('drill', async () => {
    const outcomes = await runDrill(cluster, log, drillOptions);
    const lost = outcomes.reduce((n, o) => n + o.lost, 0);
    const gaps = outcomes.map((o) => o.writeGapMs).sort((a, b) => a - b);
    const lossByFault = outcomes.filter((o) => o.lost > 0).map((o) => `${o.fault} ${o.lost}`);
    return {
      lines: [
        `matrix ${mode} seed ${values.seed}: ${outcomes.length} failovers, ${lost} acknowledged lost ` +
          `(${lossByFault.join(', ') || 'none'}), ` +
          `no write acknowledged for median ${gaps[Math.floor(gaps.length / 2)]} ms, max ${gaps.at(-1)} ms`,
      ],
      failed: mode !== 'async' && lost > 0,
    };
  });
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
