/**
 * `npm run demo`: the whole system on this machine, each part its own process, on embedded
 * PostgreSQL (data kept between runs) unless DATABASE_URL is set, or with `--ha` on a
 * throw-away three-node Patroni cluster in synchronous mode (scripts/ha). A part that dies is
 * restarted with backoff until a crash loop; Ctrl-C stops everything, the database last. The
 * chaos switches are on (`--no-chaos`); the banner prints the operator code and API keys,
 * new at each start. A start-up failure is one line on stderr saying what to do, and exit 1.
 *
 * `--webs N` runs N web processes (web-1..web-N, on free loopback ports) behind HAProxy (the
 * part `proxy`, on ONCE_WEB_PORT: the URL the banner prints), and PgBouncer in transaction mode
 * (the part `pooler`) between the apps and PostgreSQL; `--no-pooler` leaves PgBouncer out (with
 * `--ha` it is always left out: it would pin one node). `--proxy-resend` lets the proxy send a
 * request a web received and died on to another web, a POST included (docs/scale-out.md).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { integer, parseEnv } from '@once/env';
import { demoConnectionFile, removeDemoConnection, writeDemoConnection } from '@once/invariant';
import { isPortFree } from '@once/postgres';
import { persistentDataDirFor } from '@once/postgres/embedded';
import { demoApiKeysForRun } from './system/demo-api-keys.ts';
import { demoBanner } from './system/demo-banner.ts';
import { createLauncherShutdown } from './system/launcher-shutdown.ts';
import {
  CLUSTER_PORT_COUNT,
  type ReplicatedDatabase,
  replicatedDatabase,
} from './system/replicated-database.ts';
import { DEFAULT_RESTART_POLICY } from './system/restart-policy.ts';
import { repoRoot, startSystem } from './system/start-system.ts';

const { values } = parseArgs({
  options: {
    dev: { type: 'boolean', default: false },
    workers: { type: 'string', default: '2' },
    'skip-build': { type: 'boolean', default: false },
    // The cockpit's chaos switches (operator only, loopback control channel); on by default.
    'no-chaos': { type: 'boolean', default: false },
    ha: { type: 'boolean', default: false },
    webs: { type: 'string' },
    'no-pooler': { type: 'boolean', default: false },
    'proxy-resend': { type: 'boolean', default: false },
  },
});
const chaos = !values['no-chaos'];

const port = (fallback: number) => integer({ default: fallback, min: 1, max: 65_535 });
let demoEnv: ReturnType<typeof parseEnv<typeof demoEnvShape>>;
const demoEnvShape = {
  ONCE_WEB_PORT: port(3000),
  ONCE_PROCESSOR_PORT: port(4100),
  ONCE_WORKER_HEALTH_PORT: port(4200),
  ONCE_PG_PORT: port(25432),
  // --ha: the cluster's first port of eight (below 32768, see scripts/ha/cluster.ts).
  ONCE_HA_BASE_PORT: port(24000),
};
try {
  demoEnv = parseEnv(demoEnvShape, process.env);
} catch (error) {
  console.error(`demo: cannot start: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
const workerCount = Number(values.workers);
const webCount = values.webs === undefined ? undefined : Number(values.webs);
const embedded = !process.env.DATABASE_URL && !values.ha;
// Where `npm run verify` finds this run's databases (their passwords are per run or per cluster).
const connectionFile = demoConnectionFile(repoRoot);
process.once('exit', () => removeDemoConnection(connectionFile));
let system: Awaited<ReturnType<typeof startSystem>> | undefined;
const cluster = values.ha
  ? replicatedDatabase({
      basePort: demoEnv.ONCE_HA_BASE_PORT,
      log: (line) => console.log(`database  | ${line}`),
    })
  : undefined;

const shutdown = createLauncherShutdown({
  // The database last: the apps' last writes and their pools' goodbyes reach it.
  stop: async () => {
    removeDemoConnection(connectionFile);
    await system?.stop();
    await cluster?.stop();
  },
  log: (line) => console.log(line),
  exit: (code) => process.exit(code),
});
process.on('SIGINT', () => void shutdown(0, 'Ctrl-C'));
process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));

/** The one line a start-up failure prints: what is wrong and what to do, never a stack. */
async function failStart(error: unknown): Promise<never> {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`Once failed to start: ${message.split('\n')[0]}`);
  await cluster?.stop();
  process.exit(1);
}

/** Every port the demo needs, checked before anything starts. */
async function checkPorts(): Promise<void> {
  const wanted: [number, string, string][] = [
    [demoEnv.ONCE_WEB_PORT, 'web', 'ONCE_WEB_PORT'],
    [demoEnv.ONCE_PROCESSOR_PORT, 'processor', 'ONCE_PROCESSOR_PORT'],
    ...Array.from({ length: workerCount }, (_, i): [number, string, string] => [
      demoEnv.ONCE_WORKER_HEALTH_PORT + i,
      `worker-${i + 1} health`,
      'ONCE_WORKER_HEALTH_PORT',
    ]),
  ];
  if (embedded) wanted.push([demoEnv.ONCE_PG_PORT, 'PostgreSQL', 'ONCE_PG_PORT']);
  for (let i = 0; values.ha && i < CLUSTER_PORT_COUNT; i++) {
    wanted.push([demoEnv.ONCE_HA_BASE_PORT + i, 'the PostgreSQL cluster', 'ONCE_HA_BASE_PORT']);
  }
  for (const [port, part, variable] of wanted) {
    if (!(await isPortFree(port))) {
      throw new Error(
        `port ${port} (${part}) is already in use, perhaps by another Once demo: stop it ` +
          `(Ctrl-C in its terminal), or set ${variable} to a free port`,
      );
    }
  }
}

let pgDataDir: string | undefined;
let replicated: ReplicatedDatabase | undefined;
// The merchants' API keys open the REST API and the cockpit: made for this run, never the
// README's, unless the shell gives a deployment's own.
const demoApiKeys = demoApiKeysForRun(process.env);
try {
  if (!Number.isInteger(workerCount) || workerCount < 1) {
    throw new Error(`--workers must be a whole number of at least 1 (got ${values.workers})`);
  }
  if (webCount !== undefined && (!Number.isInteger(webCount) || webCount < 1)) {
    throw new Error(`--webs must be a whole number of at least 1 (got ${values.webs})`);
  }
  if (values.ha && process.env.DATABASE_URL) {
    throw new Error('--ha starts its own PostgreSQL cluster: unset DATABASE_URL, or drop --ha');
  }
  await checkPorts();
  replicated = await cluster?.start();
  // As root, a checkout the postgres OS user cannot reach keeps its data under /var/lib/once.
  pgDataDir = embedded
    ? await persistentDataDirFor(
        process.env.ONCE_PG_DATA_DIR || path.join(repoRoot, '.data/postgres'),
      )
    : undefined;
  system = await startSystem({
    databaseUrl: replicated?.databaseUrl ?? (process.env.DATABASE_URL || undefined),
    processorDatabaseUrl:
      replicated?.processorDatabaseUrl ?? (process.env.PROCESSOR_DATABASE_URL || undefined),
    pgDataDir,
    pgPort: demoEnv.ONCE_PG_PORT,
    webPort: demoEnv.ONCE_WEB_PORT,
    processorPort: demoEnv.ONCE_PROCESSOR_PORT,
    workerHealthBasePort: demoEnv.ONCE_WORKER_HEALTH_PORT,
    workerCount,
    webs: webCount,
    pooler: webCount !== undefined && !values['no-pooler'] && !values.ha,
    proxyRetry: values['proxy-resend'] ? 'resend' : 'connect',
    webMode: values.dev ? 'dev' : 'start',
    skipBuild: values['skip-build'],
    restart: DEFAULT_RESTART_POLICY,
    demoApiKeys,
    chaos,
    cluster: replicated?.control,
    // A 10 s lease, so "pause a worker past its lease" is over in about 13 s on stage.
    env: chaos && !process.env.WORKER_LEASE_MS ? { WORKER_LEASE_MS: '10000' } : {},
    onUnexpectedExit: (_name, _code, reason) => void shutdown(1, reason),
  });
  await writeDemoConnection(connectionFile, {
    pid: process.pid,
    databaseUrl: system.databaseUrl,
    processorDatabaseUrl: system.processorDatabaseUrl,
  });
} catch (error) {
  await failStart(error);
}

const database = replicated
  ? `a three-node PostgreSQL cluster (Patroni, synchronous replication; logs in ${replicated.dir})`
  : embedded
    ? `embedded PostgreSQL, data in ${pgDataDir}`
    : 'your PostgreSQL (DATABASE_URL)';
console.log(
  demoBanner({
    database,
    system: system!,
    apiKeys: demoApiKeys,
    chaos,
    restart: DEFAULT_RESTART_POLICY,
  }),
);
