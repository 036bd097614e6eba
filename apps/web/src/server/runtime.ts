import { type ApiDependencies, createApiDependencies, readApiEnv } from '@once/api';
import {
  createReplaceableDatabaseClient,
  type DatabaseClient,
  type ReplaceableDatabaseClient,
  runMigrations,
} from '@once/db';
import { seedDemoData } from '@once/db/seed';
import { installDatabaseCrashPolicy } from '@once/postgres';
import type { ChaosSwitchboard } from '../demo/chaos-switchboard.ts';
import { createHttpChaosSwitchboard } from '../demo/http-chaos-switchboard.ts';
import { createWebRouter, type WebRouter } from '../demo/web-router.ts';
import { armDropNextResponse } from './chaos/drop-next-response.ts';
import { findMigrationsFolder } from './migrations-folder.ts';
import { readWebEnv } from './web-env.ts';

/** What the route handlers share in one web process. */
export interface WebRuntime {
  client: DatabaseClient;
  deps: ApiDependencies;
  /** The API's router with the demo's chaos switches (enabled only when the launcher did). */
  router: WebRouter;
  /** PROCESSOR_WEBHOOK_SECRET; undefined refuses every webhook (503). */
  webhookSecret: string | undefined;
  /** ONCE_WEBHOOK_TOLERANCE_SECONDS (default 300): oldest signature timestamp accepted. */
  webhookToleranceSeconds?: number;
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
  await runMigrations(config.databaseDirectUrl, {
    folder: findMigrationsFolder(env),
    poolMode: config.databasePoolMode,
  });
  const client = createReplaceableDatabaseClient(
    config.databaseUrl,
    { applicationName: 'once-web', max: 20, poolMode: config.databasePoolMode },
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
      answerEncryption: config.answerEncryption,
      // ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE, PROCESSOR_URL, PROCESSOR_ADMIN_TOKEN.
      env,
    }),
    router: createWebRouter(chaosSwitchboardFrom(env)),
    webhookSecret: config.webhookSecret,
    webhookToleranceSeconds: config.webhookToleranceSeconds,
  };
}

/** The demo's chaos switches, only when the launcher set its control channel and secret. */
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
 * postgres.js throws from a setImmediate when a backend dies with a write buffered
 * (porsager/postgres#1154); Next keeps running, but that connection may never flush again, so
 * swap the pool. One listener per process (dev reloads modules).
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

/** The process's runtime, started on first use; a failed start is not cached. */
export function getWebRuntime(): Promise<WebRuntime> {
  if (!holder.__onceWebRuntime) {
    holder.__onceWebRuntime = startWebRuntime().catch((error: unknown) => {
      holder.__onceWebRuntime = undefined;
      throw error;
    });
  }
  return holder.__onceWebRuntime;
}
