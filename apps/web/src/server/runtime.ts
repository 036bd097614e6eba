import { type ApiDependencies, createApiDependencies, readApiEnv } from '@once/api';
import { type ChaosSwitchboard, createHttpChaosSwitchboard } from '@once/api/chaos-switchboard';
import {
  createReplaceableDatabaseClient,
  type DatabaseClient,
  type ReplaceableDatabaseClient,
  runMigrations,
} from '@once/db';
import { demoTenantsWithApiKeys, publicDemoKeyProblem, seedDemoData } from '@once/db/seed';
import { bindHost, parseEnv, required, text } from '@once/env';
import { installDatabaseCrashPolicy } from '@once/postgres';
import { armDropNextResponse } from './chaos/drop-next-response.ts';
import { findMigrationsFolder } from './migrations-folder.ts';
import { webhookToleranceEnv } from './webhook-clock-skew.ts';

/** What the route handlers share in one web process. */
export interface WebRuntime {
  client: DatabaseClient;
  deps: ApiDependencies;
  /** PROCESSOR_WEBHOOK_SECRET; undefined refuses every webhook (503). */
  webhookSecret: string | undefined;
  /** ONCE_WEBHOOK_TOLERANCE_SECONDS (default 300): oldest signature timestamp accepted. */
  webhookToleranceSeconds?: number;
}

/**
 * The web runtime's environment (docs/process-contract.md), validated at start. No secret
 * has a default here: the demo launcher and the test harness set them, and a start without
 * SESSION_SECRET is refused.
 */
const webEnv = {
  DATABASE_URL: required(
    'DATABASE_URL is not set. Start the system with `npm run demo` (it starts an embedded ' +
      'PostgreSQL) or set DATABASE_URL to your own PostgreSQL.',
  ),
  SESSION_SECRET: required(
    'SESSION_SECRET is not set: set a random string of at least 16 characters (`npm run demo` sets one)',
  ),
  /** Unset: every webhook is refused (503). */
  PROCESSOR_WEBHOOK_SECRET: text({ default: undefined }),
  ONCE_SEED_DEMO: text({ default: '1' }),
  ONCE_DEMO_LOGIN: text({ default: '1' }),
  /** The demo merchants' API keys; unset: their public test keys (loopback only in production). */
  ONCE_DEMO_API_KEY_TENANT_A: text({ default: undefined }),
  ONCE_DEMO_API_KEY_TENANT_B: text({ default: undefined }),
  /** Read here only to know who can reach the server (web-server-config.ts binds it). */
  HOST: bindHost(),
  ONCE_TRUST_PROXY: text({ default: '0' }),
  ...webhookToleranceEnv,
};

/** 127.0.0.0/8 and ::1: only this machine's users connect. */
function isLoopback(host: string): boolean {
  return /^(::ffff:)?127\./.test(host) || host === '::1';
}

/** Reads `webEnv` (and checks the API's variables, so a bad one refuses the start). */
function readWebEnv(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(webEnv, env);
  readApiEnv(env);
  const seedDemo = e.ONCE_SEED_DEMO !== '0';
  const demoTenants = demoTenantsWithApiKeys({
    tenant_a: e.ONCE_DEMO_API_KEY_TENANT_A,
    tenant_b: e.ONCE_DEMO_API_KEY_TENANT_B,
  });
  // The public test keys open a production server only on loopback with no proxy in front:
  // `npm run demo`. Anywhere else a deployment brings its own keys or no demo merchants.
  const onlyThisMachine = isLoopback(e.HOST) && e.ONCE_TRUST_PROXY !== '1';
  if (seedDemo && env.NODE_ENV === 'production' && !onlyThisMachine) {
    const problem = publicDemoKeyProblem(demoTenants, 'ONCE_SEED_DEMO=0 (no demo merchants)');
    if (problem) throw new Error(problem);
  }
  return {
    databaseUrl: e.DATABASE_URL,
    sessionSecret: e.SESSION_SECRET,
    webhookSecret: e.PROCESSOR_WEBHOOK_SECRET,
    webhookToleranceSeconds: e.ONCE_WEBHOOK_TOLERANCE_SECONDS,
    seedDemo,
    demoTenants,
    // Picking a demo tenant without a credential only makes sense where demo data exists.
    allowDemoLogin: seedDemo && e.ONCE_DEMO_LOGIN !== '0',
  };
}

let refusalPrinted = false;

/**
 * `readWebEnv`, printing its refusal once (`web: cannot start: <line>`): the runtime starts
 * on the server's warm-up request, whose 503 alone would not say why. Every request is then
 * refused with it until the environment is fixed.
 */
function readWebEnvOrSay(env: Record<string, string | undefined>) {
  try {
    return readWebEnv(env);
  } catch (error) {
    if (!refusalPrinted) {
      refusalPrinted = true;
      console.error(`web: cannot start: ${error instanceof Error ? error.message : error}`);
    }
    throw error;
  }
}

/**
 * Builds the runtime: migrations (advisory-locked, safe with several web processes), the demo
 * seed unless ONCE_SEED_DEMO=0, one pooled client, the API's dependencies.
 */
export async function startWebRuntime(
  env: Record<string, string | undefined> = process.env,
): Promise<WebRuntime> {
  const config = readWebEnvOrSay(env);
  await runMigrations(config.databaseUrl, findMigrationsFolder(env));
  const client = createReplaceableDatabaseClient(
    config.databaseUrl,
    { applicationName: 'once-web', max: 20 },
    (event, fields) => console.log(`web: ${event} ${JSON.stringify(fields ?? {})}`),
  );
  replacePoolOnDriverCrash(client);
  if (config.seedDemo) await seedDemoData(client.db, config.demoTenants);
  console.log(
    `web: database ready (migrations applied${config.seedDemo ? ', demo data seeded' : ''})`,
  );
  return {
    client,
    deps: createApiDependencies({
      db: client.db,
      sessionSecret: config.sessionSecret,
      allowDemoLogin: config.allowDemoLogin,
      // ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE, PROCESSOR_URL, PROCESSOR_ADMIN_TOKEN.
      env,
      chaos: chaosSwitchboardFrom(env),
    }),
    webhookSecret: config.webhookSecret,
    webhookToleranceSeconds: config.webhookToleranceSeconds,
  };
}

/**
 * The demo's chaos switches, only when the launcher enabled them: it alone sets
 * ONCE_CHAOS_URL (its loopback control channel) and ONCE_CHAOS_SECRET (a per-run secret).
 * Unset, there is no switchboard and `ops.chaosPress` refuses.
 */
function chaosSwitchboardFrom(
  env: Record<string, string | undefined>,
): ChaosSwitchboard | undefined {
  const controlUrl = env.ONCE_CHAOS_URL?.trim();
  const secret = env.ONCE_CHAOS_SECRET?.trim();
  if (!controlUrl || !secret) return undefined;
  const api = readApiEnv(env);
  return createHttpChaosSwitchboard({
    controlUrl,
    secret,
    processorUrl: api.processorUrl,
    processorAdminToken: api.processorAdminToken,
    armDropNextResponse,
  });
}

/**
 * postgres.js 3.4.9 throws from a setImmediate when a backend dies with a write buffered
 * (pg_terminate_backend, a PostgreSQL restart; porsager/postgres#1154). Next logs uncaught
 * exceptions and keeps running, but the connection it happened on may never flush again, so
 * requests on it would hang: swap the pool. One listener per process (dev reloads modules).
 */
function replacePoolOnDriverCrash(client: ReplaceableDatabaseClient): void {
  const flag = globalThis as typeof globalThis & { __onceWebPool?: ReplaceableDatabaseClient };
  const installed = flag.__onceWebPool !== undefined;
  flag.__onceWebPool = client;
  if (installed) return;
  installDatabaseCrashPolicy({
    replacePool: (reason) => flag.__onceWebPool?.replace(reason),
    onUncaughtBug(error) {
      // Alone (not under Next, which logs and keeps going), do what Node would have done.
      if (process.listenerCount('uncaughtException') === 1) {
        console.error(error);
        process.exit(1);
      }
    },
  });
}

// On globalThis, so Next's dev-mode module reloading does not open a pool per reload.
const holder = globalThis as typeof globalThis & { __onceWebRuntime?: Promise<WebRuntime> };

/**
 * The process's runtime, started on first use. A failed start (database down) is not
 * cached: the next request tries again.
 *
 * @example
 * const { deps } = await getWebRuntime();
 */
export function getWebRuntime(): Promise<WebRuntime> {
  if (!holder.__onceWebRuntime) {
    holder.__onceWebRuntime = startWebRuntime().catch((error: unknown) => {
      holder.__onceWebRuntime = undefined;
      throw error;
    });
  }
  return holder.__onceWebRuntime;
}
