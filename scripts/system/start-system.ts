import { existsSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSecrets } from '@once/env';
import { ensureDatabase, findFreePort, processorDatabaseUrlFor } from '@once/postgres';
import {
  embeddedAdminUrl,
  POSTGRES_FAILED_PREFIX,
  serverUser,
  throwAwayDataDir,
} from '@once/postgres/embedded';
import { type ChaosControl, startChaosControl } from './chaos-control.ts';
import type { ClusterControl } from './cluster-parts.ts';
import { newOperatorCode } from './operator-code.ts';
import type { RestartPolicy } from './restart-policy.ts';
import {
  type ManagedProcess,
  type ProcessSpec,
  Supervisor,
  type UnexpectedExitHandler,
} from './supervisor.ts';
import { type ProxyRetry, poolerSpec, proxySpec, topologyDir } from './web-topology.ts';

export const repoRoot = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface SystemOptions {
  /** Your own PostgreSQL. Unset: an embedded one is started. */
  databaseUrl?: string;
  /** The processor's own database; defaults to `<database>_processor` on the same server. */
  processorDatabaseUrl?: string;
  /** Embedded only: keep data here between runs. Unset: a throw-away cluster. */
  pgDataDir?: string;
  /** The code a demo operator sign-in needs (the web's ONCE_OPERATOR_CODE). Unset: a new one. */
  operatorCode?: string;
  /** The demo merchants' API keys, given to the web only. Unset: the web's test keys. */
  demoApiKeys?: Record<string, string>;
  pgPort?: number;
  pgDurability?: 'durable' | 'fast';
  webPort?: number;
  processorPort?: number;
  workerCount?: number;
  /** First worker's health port; worker i listens on base + i. */
  workerHealthBasePort?: number;
  /** `start` serves a production build (built first unless `skipBuild`); `dev` runs next dev. */
  webMode?: 'start' | 'dev';
  skipBuild?: boolean;
  /** Next.js build folder inside apps/web (default `.next`). */
  nextDistDir?: string;
  /** Extra environment for every app process. */
  env?: Record<string, string>;
  log?: (line: string) => void;
  /** A part exited and will not come back (no restart policy, or a crash loop). */
  onUnexpectedExit?: UnexpectedExitHandler;
  /** Restart parts that die (PostgreSQL too, on the same data and port); unset: only report. */
  restart?: RestartPolicy;
  /** Demo chaos switches: the launcher's control channel, told to the web process only. */
  chaos?: boolean;
  /** A replicated database (`--ha`): its nodes show as parts and it can be failed over. */
  cluster?: ClusterControl;
  /**
   * Several webs (`web-1`..`web-N`, each on a free loopback port) behind HAProxy (`proxy`),
   * which listens on `webPort`. Unset: one web (`web`) on `webPort`, no proxy.
   */
  webs?: number;
  /** With `webs`: what the proxy sends again to another web (default `connect`). */
  proxyRetry?: ProxyRetry;
  /** PgBouncer in transaction mode (`pooler`) between the apps (web, workers) and PostgreSQL. */
  pooler?: boolean;
}

/** How long `pause_worker` keeps a worker stopped beyond its lease. */
const PAUSE_MARGIN_MS = 3_000;

export interface RunningSystem {
  supervisor: Supervisor;
  /** The web's own address (loopback): health checks, webhooks, tests. */
  webUrl: string;
  /**
   * The one origin a browser is given (WEB_PUBLIC_URL from the shell, else `webUrl`): the banner
   * prints it and the processor sends a 3-D Secure shopper back to it.
   */
  publicWebUrl: string;
  processorUrl: string;
  databaseUrl: string;
  processorDatabaseUrl: string;
  /** The embedded PostgreSQL's data directory (unset with your own DATABASE_URL). */
  pgDataDir?: string;
  /** The chaos control channel, when started with `chaos: true`. */
  chaos?: Pick<ChaosControl, 'url' | 'secret'>;
  /** This run's operator code: the demo's operator sign-in asks for it. */
  operatorCode: string;
  /** Where the servers listen (HOST; 127.0.0.1 unless set). */
  host: string;
  /** Environment each app process was started with (for restarting one). */
  envFor(name: string): Record<string, string>;
  startWorker(index: number): Promise<ManagedProcess>;
  /** The web processes' names: `web`, or `web-1`..`web-N` behind the proxy. */
  webNames: string[];
  /** Start (or restart) web `index` (0 unless `webs`). */
  startWeb(index?: number): Promise<ManagedProcess>;
  startProcessor(): Promise<ManagedProcess>;
  /** With `webs`: the proxy's generated configuration and admin socket (`proxyCommand`). */
  topologyDir?: string;
  startProxy(): Promise<ManagedProcess>;
  startPooler(): Promise<ManagedProcess>;
  stop(): Promise<void>;
}

const tsxEntry = (file: string, ...args: string[]) => ({
  command: process.execPath,
  args: ['--import', 'tsx', path.join(repoRoot, file), ...args],
  cwd: repoRoot,
});

/** Starts PostgreSQL (embedded unless given), then processor, workers and web, each its own process. */
export async function startSystem(options: SystemOptions = {}): Promise<RunningSystem> {
  const supervisor = new Supervisor(options.log, options.onUnexpectedExit, {
    restart: options.restart,
  });
  // A throw-away cluster's directory and port are chosen here: a restart needs the same ones.
  const throwAway =
    !options.databaseUrl && !options.pgDataDir ? await throwAwayDataDir(serverUser()) : undefined;
  const removeThrowAway = async () => {
    if (throwAway) await rm(throwAway, { recursive: true, force: true });
  };
  try {
    const system = await startParts(supervisor, {
      ...options,
      pgDataDir: options.pgDataDir ?? throwAway,
    });
    return {
      ...system,
      stop: async () => {
        await system.stop();
        await removeThrowAway();
      },
    };
  } catch (error) {
    await supervisor.stopAll();
    await removeThrowAway();
    throw error;
  }
}

async function startParts(supervisor: Supervisor, options: SystemOptions): Promise<RunningSystem> {
  const { databaseUrl, processorDatabaseUrl } = await startDatabase(supervisor, options);
  const dir = options.webs || options.pooler ? topologyDir() : undefined;
  const removeDir = () => dir && rmSync(dir, { recursive: true, force: true });
  let chaos: Awaited<ReturnType<typeof startChaos>>;
  let parts: ReturnType<typeof appStarters>;
  let env: AppEnvironment;
  let building: Promise<void> = Promise.resolve();
  try {
    const pooler = options.pooler
      ? poolerSpec({ dir: dir!, databaseUrl, port: await findFreePort() })
      : undefined;
    if (pooler) await supervisor.start(pooler.spec);
    // One at a time: two probes at once could be handed the same free port.
    const webPorts = options.webs ? [] : [options.webPort ?? 3000];
    while (webPorts.length < (options.webs ?? 0)) webPorts.push(await findFreePort());
    env = appEnvironment(options, databaseUrl, processorDatabaseUrl, {
      webPorts,
      pooledUrl: pooler?.url(databaseUrl),
    });
    chaos = await startChaos(supervisor, options, env);
    parts = appStarters(supervisor, options, env, dir, pooler?.spec);
    building = buildWeb(supervisor, options, env.web);
    await parts.startProcessor();
    for (let i = 0; i < (options.workerCount ?? 1); i++) await parts.startWorker(i);
    await building;
    await Promise.all(env.webPorts.map((_, i) => parts.startWeb(i)));
    if (options.webs) await parts.startProxy();
  } catch (error) {
    // A build still running fails too: only the first failure is told.
    building.catch(() => {});
    await chaos?.close();
    removeDir();
    throw error;
  }
  return {
    supervisor,
    webUrl: env.webUrl,
    publicWebUrl: env.publicWebUrl,
    processorUrl: env.processorUrl,
    databaseUrl,
    processorDatabaseUrl,
    pgDataDir: options.databaseUrl ? undefined : options.pgDataDir,
    chaos: chaos ? { url: chaos.url, secret: chaos.secret } : undefined,
    operatorCode: env.web.ONCE_OPERATOR_CODE!,
    host: env.host,
    envFor: (name) =>
      name.startsWith('worker-')
        ? env.worker(Number(name.slice(7)) - 1)
        : name.startsWith('web')
          ? env.webAt(Math.max(0, Number(name.slice(4)) - 1))
          : env.processor,
    webNames: env.webPorts.map((_, i) => webName(options, i)),
    topologyDir: dir,
    ...parts,
    stop: async () => {
      await chaos?.close();
      await supervisor.stopAll();
      removeDir();
    },
  };
}

const LOOPBACK = ['127.0.0.1', '::1', 'localhost'];
const webName = (options: SystemOptions, index: number) =>
  options.webs ? `web-${index + 1}` : 'web';

/** The embedded PostgreSQL unless a database is given, and the processor's database on it. */
async function startDatabase(supervisor: Supervisor, options: SystemOptions) {
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    const args = ['--durability', options.pgDurability ?? 'durable'];
    if (options.pgDataDir) args.push('--data-dir', options.pgDataDir);
    args.push('--port', String(options.pgPort ?? (await findFreePort())));
    args.push('--database', 'once');
    const pg = await supervisor.start({
      name: 'postgres',
      ...tsxEntry('packages/postgres/src/embedded-postgres-process.ts', ...args),
      readyLine: /^POSTGRES_READY (\S+)$/,
      failLine: new RegExp(`^${POSTGRES_FAILED_PREFIX}(.*)$`),
      readyTimeoutMs: 60_000,
    });
    // Printed with its password masked; the cluster's password is in its data directory.
    const adminUrl = new URL(embeddedAdminUrl(pg.readyMatch![1]!, options.pgDataDir!));
    adminUrl.pathname = '/once';
    databaseUrl = adminUrl.toString();
  }
  let processorDatabaseUrl = options.processorDatabaseUrl;
  if (!processorDatabaseUrl) {
    processorDatabaseUrl = processorDatabaseUrlFor(databaseUrl);
    await ensureDatabase(databaseUrl, new URL(processorDatabaseUrl).pathname.slice(1));
  }
  return { databaseUrl, processorDatabaseUrl };
}

type AppEnvironment = ReturnType<typeof appEnvironment>;

/** Each app process's environment: what all share, then the processor's, the web's and a worker's. */
function appEnvironment(
  options: SystemOptions,
  databaseUrl: string,
  processorDatabaseUrl: string,
  topology: { webPorts: number[]; pooledUrl?: string },
) {
  // With `webs`, the proxy's: the one URL clients, the banner and the processor's webhooks use.
  const webPort = options.webPort ?? 3000;
  const processorPort = options.processorPort ?? 4100;
  const workerBase = options.workerHealthBasePort ?? 4200;
  const webUrl = `http://127.0.0.1:${webPort}`;
  const processorUrl = `http://127.0.0.1:${processorPort}`;
  const shared = {
    // Fresh per run, handed to the children only by environment.
    ...generateSecrets(),
    ...process.env,
    NODE_ENV: 'production',
    NEXT_TELEMETRY_DISABLED: '1',
    DATABASE_URL: databaseUrl,
    // Behind the pooler, the queries go through it; a session (LISTEN, migrations) goes direct.
    ...(topology.pooledUrl && {
      DATABASE_URL: topology.pooledUrl,
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_DIRECT_URL: databaseUrl,
    }),
    PROCESSOR_URL: processorUrl,
    // A demo should show an `unknown` payment being resolved within seconds, not a minute.
    WORKER_RECONCILE_AFTER_MS: process.env.WORKER_RECONCILE_AFTER_MS ?? '15000',
    // Next.js prints colour codes unless told not to; the supervisor prefixes plain lines.
    NO_COLOR: '1',
    ...options.env,
  } as Record<string, string>;
  // This machine only, unless HOST says otherwise: nobody on the network needs the cockpit.
  const host = shared.HOST || '127.0.0.1';
  shared.HOST = host;
  // One origin for the banner and the 3-D Secure return, or the shopper lands without a session.
  const publicWebUrl = (shared.WEB_PUBLIC_URL || webUrl).replace(/\/+$/, '');
  shared.WEB_PUBLIC_URL = publicWebUrl;
  shared.WORKER_HEALTH_HOST ||= host;
  const web = {
    ...shared,
    PORT: String(webPort),
    ONCE_NEXT_DIST_DIR: options.nextDistDir ?? '.next',
    ONCE_OPERATOR_CODE: options.operatorCode ?? newOperatorCode(),
    ...options.demoApiKeys,
  } as Record<string, string>;
  return {
    shared,
    host,
    webPorts: topology.webPorts,
    webUrl,
    publicWebUrl,
    processorUrl,
    workerHealthUrl: (i: number) => `http://127.0.0.1:${workerBase + i}/healthz`,
    processor: {
      ...shared,
      PORT: String(processorPort),
      PROCESSOR_DATABASE_URL: processorDatabaseUrl,
      PROCESSOR_WEBHOOK_URL: `${webUrl}/api/webhooks/processor`,
    },
    web,
    /**
     * Web `i`'s own: behind the proxy, on loopback. A proxy others reach forwards their address
     * (X-Forwarded-For); on loopback every client is this machine anyway.
     */
    webAt: (i: number): Record<string, string> =>
      options.webs
        ? {
            ...web,
            PORT: String(topology.webPorts[i]),
            HOST: '127.0.0.1',
            ...(LOOPBACK.includes(host) ? {} : { ONCE_TRUST_PROXY: '1' }),
          }
        : web,
    worker: (i: number) => ({
      ...shared,
      PROCESSOR_DATABASE_URL: processorDatabaseUrl,
      WORKER_ID: `worker-${i + 1}`,
      WORKER_HEALTH_PORT: String(workerBase + i),
    }),
  };
}

/** The demo's chaos switches, when asked for: a control channel only the web is told of. */
async function startChaos(supervisor: Supervisor, options: SystemOptions, env: AppEnvironment) {
  if (!options.chaos) return undefined;
  const chaos = await startChaosControl({
    supervisor,
    pauseMs: Number(env.shared.WORKER_LEASE_MS || 30_000) + PAUSE_MARGIN_MS,
    cluster: options.cluster,
    log: options.log,
  });
  env.web.ONCE_CHAOS_URL = chaos.url;
  env.web.ONCE_CHAOS_SECRET = chaos.secret;
  return chaos;
}

const webDir = path.join(repoRoot, 'apps/web');
const nextBin = path.join(repoRoot, 'node_modules/next/dist/bin/next');

/** Start (or restart) the processor, worker i, a web, the proxy or the pooler under the supervisor. */
function appStarters(
  supervisor: Supervisor,
  options: SystemOptions,
  env: AppEnvironment,
  dir: string | undefined,
  pooler: ProcessSpec | undefined,
) {
  const dev = options.webMode === 'dev';
  const missing = (part: string) => () =>
    Promise.reject(
      new Error(
        `this system has no ${part} (started without ${part === 'proxy' ? 'webs' : 'pooler'})`,
      ),
    );
  return {
    startProcessor: () =>
      supervisor.start({
        name: 'processor',
        ...tsxEntry('apps/processor/src/main.ts'),
        env: env.processor,
        healthUrl: `${env.processorUrl}/healthz`,
      }),
    startWorker: (i: number) =>
      supervisor.start({
        name: `worker-${i + 1}`,
        ...tsxEntry('apps/worker/src/runtime/main.ts'),
        env: env.worker(i),
        healthUrl: env.workerHealthUrl(i),
      }),
    // Production mode runs the web's own server (exit 0 on SIGTERM; `next start` exits 143).
    startWeb: (index = 0) => {
      const webEnv = env.webAt(index);
      return supervisor.start({
        name: webName(options, index),
        command: process.execPath,
        args: dev
          ? [nextBin, 'dev', '--port', webEnv.PORT!, '--hostname', webEnv.HOST!]
          : ['--import', 'tsx', path.join(webDir, 'src/process/main.ts')],
        cwd: webDir,
        env: { ...webEnv, ...(dev ? { NODE_ENV: 'development' } : {}) },
        healthUrl: `http://127.0.0.1:${webEnv.PORT}/api/health`,
        readyTimeoutMs: 180_000,
      });
    },
    startProxy:
      dir && options.webs
        ? () =>
            supervisor.start(
              proxySpec({
                dir,
                host: env.host,
                port: options.webPort ?? 3000,
                webs: env.webPorts.map((port, i) => ({ name: webName(options, i), port })),
                retry: options.proxyRetry ?? 'connect',
              }),
            )
        : missing('proxy'),
    startPooler: pooler ? () => supervisor.start(pooler) : missing('pooler'),
  };
}

/** `next build` for production mode, unless skipped and a build is already there. */
async function buildWeb(
  supervisor: Supervisor,
  options: SystemOptions,
  webEnv: Record<string, string>,
) {
  const distDir = options.nextDistDir ?? '.next';
  if (options.webMode === 'dev') return;
  if (options.skipBuild && existsSync(path.join(webDir, distDir, 'BUILD_ID'))) return;
  const build = await supervisor.start({
    name: 'build',
    command: process.execPath,
    args: [nextBin, 'build'],
    cwd: webDir,
    env: { ...webEnv, NODE_ENV: 'production' },
    oneShot: true,
  });
  const code = await build.exited;
  if (code !== 0) throw new Error(`next build failed with code ${code}`);
}
