import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  AppPayment,
  AppRefund,
  BackstageEvent,
  ChaosTarget,
  DatabaseCrash,
  IntentPlan,
  LedgerEntry,
  NemesisPlan,
  Snapshot,
  TenantCatalogue,
} from '@once/chaos';
import { OUTBOX_NOTIFY_CHANNEL } from '@once/db/schema';
import { demoTenants } from '@once/db/seed';
import { ensureDatabase, findFreePort } from '@once/postgres';
import { type EmbeddedPostgresChild, spawnEmbeddedPostgres } from '@once/postgres/embedded';
import { type RunningSystem, startSystem } from '@once/scripts/start-system';
import { proxyWebStats } from '@once/scripts/web-topology';
import type { Browser, BrowserContext } from '@playwright/test';
import postgres from 'postgres';
import { E2E_NEXT_DIST_DIR } from '../support/global-setup.ts';
import { runBrowserIntent } from './clients/browser-checkout.ts';
import { runHttpIntent } from './clients/http-checkout.ts';
import { type HaDatabase, startHaDatabase } from './failover/ha-database.ts';
import { runReturningOperators } from './failover/returning-operators.ts';
import { runReturningShoppers } from './failover/returning-shoppers.ts';
import type { OnceProfile } from './profiles.ts';

/** The one test card the processor charges (the others are declined). */
const CHARGING_PAYMENT_METHOD: IntentPlan['paymentMethod'] = 'pm_card_visa';

/** After a failover run's clients: those who find a write gone come back within this. */
const RETURNING_MS = 90_000;
/** How long an admin call waits for a processor the nemesis restarted: its health budget. */
const ADMIN_CALL_PATIENCE_MS = 180_000;
/** The nemesis' own connections: a storm of pg_terminate_backend spares them. */
const NEMESIS_APPLICATION_NAME = 'once-chaos-nemesis';

/** This repository's tenants as the chaos clients see them. */
export const onceCatalogues: TenantCatalogue[] = demoTenants.map((t) => ({
  tenantId: t.id,
  apiKey: t.apiKey,
  processorAccountId: t.processorAccountId,
  products: t.products.map((p) => ({ id: p.id, unitAmount: p.unitAmount })),
}));

/** The target, and with a topology each web's share of the requests against its floor. */
interface OnceTarget extends ChaosTarget {
  topologyFloors(): { line: string | undefined; shortfalls: string[] };
}

export interface OnceTargetOptions {
  profile: OnceProfile;
  /** Drives the browser customers (absent: the run has none). */
  browser?: Browser;
  /** Every line every process prints (prefixed with its name). */
  log?: (line: string) => void;
  /** The repository to run (a planted-bug copy, or this one). */
  repoRoot?: string;
}

/**
 * The Once checkout as a chaos target: its own embedded PostgreSQL (so the nemesis can
 * crash it), or with `replication` a Patroni cluster for the app's database (so the nemesis
 * can fail it over), then processor, workers and web as real OS processes through the
 * launcher, with the profile's short windows in their environment.
 */
export async function startOnceTarget(options: OnceTargetOptions): Promise<OnceTarget> {
  const log = options.log ?? (() => {});
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'once-chaos-pg-'));
  const pgPort = await findFreePort();
  const startPg = () =>
    spawnEmbeddedPostgres({
      dataDir,
      port: pgPort,
      // Durable: with synchronous_commit off, an immediate shutdown loses commits the app
      // already answered for, and the checker (rightly) reports those payments as missing.
      durability: 'durable',
      log: (line) => log(`postgres  | ${line}`),
    });
  let pg: EmbeddedPostgresChild = await startPg();
  let ha: HaDatabase | undefined;
  try {
    // The processor's ledger stays on the embedded server, the third party's own.
    const { replication } = options.profile;
    ha = replication ? await startHaDatabase(replication, log) : undefined;
  } catch (error) {
    await pg.stop();
    throw error;
  }
  if (!ha) await ensureDatabase(pg.adminUrl, 'once');
  await ensureDatabase(pg.adminUrl, 'once_processor');
  const databaseUrl = ha?.url ?? pg.databaseUrl('once');
  const processorDatabaseUrl = pg.databaseUrl('once_processor');
  const [webPort, processorPort, workerHealthBasePort] = [
    await findFreePort(),
    await findFreePort(),
    // worker-N listens on base + N - 1: all of them must be free, not only the first.
    await findFreePort({ count: options.profile.workers }),
  ];

  const exitListeners: ((name: string, detail: string) => void)[] = [];
  const down = new Set<string>();
  /** Processes the nemesis is starting again: an exit before they are ready is a failed start. */
  const starting = new Set<string>();
  const paused = new Set<string>();
  const workerNames = Array.from({ length: options.profile.workers }, (_, i) => `worker-${i + 1}`);
  const claims = new Map<string, string>();
  /** Each worker's claims of a job's first attempt, newest last (the aimed pause reads them). */
  const firstAttemptClaims = new Map<string, { job: string; at: number }[]>();
  /** Workers to stop the moment they log their next claim (SIGSTOP from the log handler). */
  const stopAtClaim = new Map<string, (job: string) => void>();
  const counters: Record<string, number> = {
    lease_takeovers: 0,
    lease_lost: 0,
    reconciled: 0,
    stale_workers_fenced: 0,
    unreadable_intents_reconciled: 0,
  };

  /** Worker log lines tell who claimed which job: a claim by another worker is a takeover. */
  const watchLine = (line: string) => {
    const claim = /^(worker-\d+)\s*\| \S+ job\.claimed job=(\S+).* attempt=(\d+)/.exec(line);
    if (claim) {
      stopAtClaim.get(claim[1]!)?.(claim[2]!);
      const previous = claims.get(claim[2]!);
      if (previous && previous !== claim[1]) counters.lease_takeovers!++;
      claims.set(claim[2]!, claim[1]!);
      if (claim[3] === '1') {
        const list = firstAttemptClaims.get(claim[1]!) ?? [];
        list.push({ job: claim[2]!, at: Date.now() });
        firstAttemptClaims.set(claim[1]!, list.slice(-8));
      }
    }
    if (/result=lease_lost/.test(line)) counters.lease_lost!++;
    // A worker that woke after its job was taken over, refused at its first write.
    if (/charge\.intent_not_recorded/.test(line)) counters.stale_workers_fenced!++;
    // The reconciler read a 404 for an intent it had recorded, and settled nothing on it.
    if (/reconcile\.lookup_failed .*(not_found|resource_missing|No such)/.test(line))
      counters.unreadable_intents_reconciled!++;
    if (/reconcile\.settled/.test(line)) counters.reconciled!++;
  };

  /**
   * Resolves with the first job one of `names` claims, having stopped that worker
   * synchronously from the log line's handler; or with undefined after `withinMs` (nobody
   * is then stopped).
   */
  const claimedBy = (names: readonly string[], withinMs: number) =>
    new Promise<{ job: string; worker: string } | undefined>((resolve) => {
      const forget = () => {
        for (const name of names) stopAtClaim.delete(name);
      };
      const timer = setTimeout(() => {
        forget();
        resolve(undefined);
      }, withinMs);
      for (const name of names) {
        stopAtClaim.set(name, (job) => {
          forget();
          clearTimeout(timer);
          if (!down.has(name)) system.supervisor.signal(name, 'SIGSTOP');
          paused.add(name);
          resolve({ job, worker: name });
        });
      }
    });

  /** Pauses waiting for a claim: each ends its database client when asked (see below). */
  const waitingPauses = new Set<() => Promise<void>>();
  /**
   * postgres.js crashes the process when a connection dies under a write it scheduled (a
   * write on a closed socket): before the nemesis crashes PostgreSQL, the pauses waiting
   * for a claim let go of the database and fall back to the logged claim; the nemesis'
   * backend storms spare their connections (by application name).
   */
  const releasePausesFromDatabase = () => Promise.all([...waitingPauses].map((end) => end()));
  /** While PostgreSQL crash-restarts, a new pause does not open a connection at all. */
  let databaseRestarting = false;

  /**
   * With `tenants` locked by `tx`: waits (1 s at most) until a worker's charge read is
   * blocked on that lock after the worker claimed a job's first attempt, and stops that
   * worker there. Blocked is read from the server (`pg_locks`: the worker's connection
   * waits for this lock, in the charge's read), so the stop is known to land before the
   * processor call; the claim comes from the worker's log.
   */
  const resumeWorker = (name: string) => {
    system.supervisor.signal(name, 'SIGCONT');
    paused.delete(name);
  };

  const stopBlockedWorker = async (
    tx: postgres.TransactionSql,
    lockedAt: number,
    workers: readonly string[],
  ): Promise<{ job: string; worker: string } | undefined> => {
    const until = Date.now() + 1_000;
    while (Date.now() < until) {
      await tx`select pg_stat_clear_snapshot()`;
      // Waiting for THIS lock (not a row lock elsewhere), in the charge's first read.
      const waiting = await tx<{ application_name: string }[]>`
        select activity.application_name
        from pg_locks as lock
        join pg_stat_activity as activity on activity.pid = lock.pid
        where not lock.granted and lock.relation = 'tenants'::regclass
          and activity.application_name like 'once-worker %'
          and activity.query like '%select payment.status, payment.amount%'`;
      for (const row of waiting) {
        const worker = row.application_name.slice('once-worker '.length);
        const claim = firstAttemptClaims.get(worker)?.findLast((c) => c.at >= lockedAt - 1_000);
        if (!claim || !workers.includes(worker) || down.has(worker)) continue;
        // A card the processor declines is never charged, so a stalled worker that wakes on it
        // cannot charge twice: let it go, the pause waits for a job that proves something.
        const [job] = await tx<{ method: string | null }[]>`
          select payload->>'paymentMethod' as method from outbox_jobs where id = ${claim.job}`;
        if (job && job.method !== CHARGING_PAYMENT_METHOD) return undefined;
        system.supervisor.signal(worker, 'SIGSTOP');
        paused.add(worker);
        return { job: claim.job, worker };
      }
      await sleep(5);
    }
    return undefined;
  };

  /**
   * Stops a worker between its claim of a job and its first call to the processor, where a
   * stall matters (its lease runs out, another worker takes the job, the processor forgets
   * the keys). That window is one database read wide, too short for the claim's log line,
   * so the nemesis holds it open: when a job is enqueued it locks `tenants` (which the
   * charge's first read joins and claiming does not) until a worker's read blocks on it.
   * Failing that within 10 s, the worker is stopped at its next logged claim, or idle.
   */
  const stopAtNextClaim = async (
    name: string,
  ): Promise<{ job: string; worker: string } | undefined> => {
    const running = () => workerNames.filter((w) => !down.has(w) && !paused.has(w));
    if (databaseRestarting) return claimedBy([name], 3_000);
    const sql = postgres(databaseUrl, {
      max: 1,
      onnotice: () => {},
      connect_timeout: 5,
      // Spared by the nemesis' own pg_terminate_backend storms.
      connection: { application_name: NEMESIS_APPLICATION_NAME },
    });
    let done = false;
    let loop: Promise<void> | undefined;
    let ended: Promise<void> | undefined;
    /** Wakes the open transaction: a job was enqueued (or the pause is ending). */
    let wake: (() => void) | undefined;
    const end = () => {
      done = true;
      wake?.();
      ended ??= (async () => {
        await loop;
        await sql.end({ timeout: 2 }).catch(() => {});
      })();
      return ended;
    };
    waitingPauses.add(end);
    try {
      await sql.listen(OUTBOX_NOTIFY_CHANNEL, () => wake?.());
      const deadline = Date.now() + 10_000;
      let stopped: { job: string; worker: string } | undefined;
      // A transaction is open before the job is enqueued, so taking the lock is one round
      // trip: the race against the workers' claim and read is mostly won.
      loop = (async () => {
        while (!done && !stopped && Date.now() < deadline) {
          await sql
            .begin(async (tx) => {
              await tx`set local lock_timeout = '1s'`;
              const notified = await new Promise<boolean>((resolve) => {
                const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
                wake = () => {
                  clearTimeout(timer);
                  resolve(!done);
                };
              });
              wake = undefined;
              if (!notified) return;
              const lockedAt = Date.now();
              await tx.unsafe('lock table tenants in access exclusive mode');
              stopped = await stopBlockedWorker(tx, lockedAt, running());
            })
            .catch(() => sleep(200));
        }
      })();
      await loop;
      await end();
      if (stopped) return stopped;
    } catch {
      await end();
    } finally {
      waitingPauses.delete(end);
    }
    return down.has(name) || paused.has(name) ? undefined : claimedBy([name], 3_000);
  };

  const { topology } = options.profile;
  let system: RunningSystem;
  try {
    system = await startSystem({
      databaseUrl,
      processorDatabaseUrl,
      webPort,
      processorPort,
      workerHealthBasePort,
      workerCount: options.profile.workers,
      ...(topology && {
        webs: topology.webs,
        proxyRetry: 'resend' as const,
        // PgBouncer would pin one node of a replicated cluster.
        pooler: !ha,
      }),
      skipBuild: true,
      nextDistDir: E2E_NEXT_DIST_DIR,
      env: options.profile.env,
      log: (line) => {
        watchLine(line);
        log(line);
      },
      onUnexpectedExit: (name, code) => {
        down.add(name);
        if (starting.has(name)) return;
        for (const l of exitListeners) l(name, `exit code ${code}`);
      },
    });
  } catch (error) {
    await ha?.stop();
    await pg.stop();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }

  /** A read on a connection of its own (the nemesis may have just restarted the server). */
  const read = async <T>(url: string, query: (sql: postgres.Sql) => Promise<T>): Promise<T> => {
    const options = { max: 1, onnotice: () => {}, connect_timeout: 5, transform: postgres.camel };
    const sql = postgres(url, options);
    try {
      return await query(sql);
    } finally {
      await sql.end({ timeout: 2 });
    }
  };

  async function adminCall(method: string, pathName: string, body?: unknown): Promise<unknown> {
    // The processor may be down (killed by the nemesis a moment ago): try until it is back,
    // as long as a restart may take to become healthy (a fault left unarmed fails coverage).
    const deadline = Date.now() + ADMIN_CALL_PATIENCE_MS;
    for (;;) {
      try {
        const response = await fetch(`${system.processorUrl}${pathName}`, {
          method,
          headers: {
            // The launcher makes a fresh token per run and hands it to the processor.
            'x-admin-token': system.envFor('processor').PROCESSOR_ADMIN_TOKEN!,
            'content-type': 'application/json',
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(5_000),
        });
        if (response.ok) return await response.json().catch(() => undefined);
        if (response.status < 500 || Date.now() >= deadline)
          throw new Error(`${method} ${pathName} -> ${response.status} ${await response.text()}`);
      } catch (error) {
        if (Date.now() >= deadline) throw error;
      }
      await sleep(500);
    }
  }

  /**
   * With a topology, `web` is the web tier: each kill takes the next of its parts in turn (a
   * web, the proxy, the pooler), a web once it is answering a request; its restart the same.
   */
  // The webs first and between the others: each part is hit before any is hit twice.
  const tierOrder = topology
    ? interleave(system.webNames, ['proxy', ...(ha ? [] : ['pooler'])])
    : [];
  let tierKills = 0;
  let standIn = 'web';
  const answered = new Map<string, number>();
  const lastSeen = new Map<string, { answered: number; retries: number }>();
  /** The proxy's counters, added up across its restarts (each restart starts them from 0). */
  const readProxyStats = async () => {
    const stats = await proxyWebStats(system.topologyDir!).catch(() => []);
    for (const web of stats) {
      const before = lastSeen.get(web.web) ?? { answered: 0, retries: 0 };
      const delta = (now: number, then: number) => (now >= then ? now - then : now);
      answered.set(web.web, (answered.get(web.web) ?? 0) + delta(web.answered, before.answered));
      counters.proxy_retries = (counters.proxy_retries ?? 0) + delta(web.retries, before.retries);
      lastSeen.set(web.web, { answered: web.answered, retries: web.retries });
    }
  };
  const statsTimer = topology ? setInterval(() => void readProxyStats(), 1_000) : undefined;
  /** A web answering a request right now (the proxy's current sessions to it), 2 s at most. */
  const untilBusy = async (web: string) => {
    for (let i = 0; i < 40; i++) {
      const stat = await proxyWebStats(system.topologyDir!).catch(() => []);
      if (stat.find((s) => s.web === web)?.current) return true;
      await sleep(50);
    }
    return false;
  };

  // A killed, crashed or failed start leaves no supervisor entry: one kill stops the live part.
  const killPart = async (name: string) => {
    if (system.supervisor.names.includes(name)) await system.supervisor.kill(name);
  };
  const restart = async (name: string) => {
    starting.add(name);
    try {
      // A start can fail while PostgreSQL is itself restarting: try again, like a supervisor.
      await startWithRetries(
        async () => {
          await killPart(name);
          if (name === 'proxy') await system.startProxy();
          else if (name === 'pooler') await system.startPooler();
          else if (name.startsWith('web')) await system.startWeb(webIndex(name));
          else if (name === 'processor') await system.startProcessor();
          else await system.startWorker(Number(name.replace('worker-', '')) - 1);
        },
        (error) => log(`chaos     | ${name} did not start (${error.message}); retrying`),
      );
      down.delete(name);
    } finally {
      starting.delete(name);
    }
  };

  /**
   * SIGQUIT to the postmaster (immediate shutdown), or SIGKILL of the postmaster alone (the
   * OOM killer: its wrapper must notice and exit by itself), then start it again.
   */
  const crashRestart = async (how: DatabaseCrash) => {
    await releasePausesFromDatabase();
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    // SIGQUIT is PostgreSQL's immediate shutdown: no checkpoint, crash recovery on start.
    process.kill(pid, how === 'kill_postmaster' ? 'SIGKILL' : 'SIGQUIT');
    for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(100);
    if (how === 'kill_postmaster') {
      const wrapper = pg.child;
      for (let i = 0; i < 100 && wrapper.exitCode === null; i++) await sleep(100);
      if (wrapper.exitCode === null) {
        throw new Error('the PostgreSQL wrapper kept running after its postmaster was killed');
      }
    }
    pg.child.kill('SIGKILL');
    await sleep(200);
    // A start can be refused while the dead server's backends are still exiting.
    await startWithRetries(async () => {
      pg = await startPg();
    });
  };

  const env = options.profile.env;
  const retention = Number(env.PROCESSOR_IDEMPOTENCY_RETENTION_MS ?? 0);
  const openContexts = new Set<BrowserContext>();
  const { browser } = options;
  return {
    clients: {
      http: runHttpIntent,
      ...(browser && {
        browser: (intent, ctx) => runBrowserIntent(browser, intent, { ...ctx, openContexts }),
        abandon: async () => {
          await Promise.all([...openContexts].map((c) => c.close().catch(() => {})));
        },
      }),
      async returning(intents, ctx) {
        // Each group gets its own window, counted from when it starts.
        const within = () => {
          const until = ctx.history.elapsed() + RETURNING_MS;
          return { ...ctx, deadlineAt: () => until };
        };
        const returned = await runReturningShoppers(intents, within());
        const retried = await runReturningOperators(intents, within());
        return [
          `${returned} shopper(s) found their acknowledged payment gone and paid again`,
          `${retried} acknowledged refund(s) found gone and asked for again`,
        ];
      },
    },
    catalogues: onceCatalogues,
    workerNames,
    leaseMs: Number(options.profile.env.WORKER_LEASE_MS ?? 30_000),
    processorTimeoutMs: Number(options.profile.env.WORKER_PROCESSOR_TIMEOUT_MS ?? 10_000),
    reconcileAfterMs: Number(options.profile.env.WORKER_RECONCILE_AFTER_MS ?? 60_000),
    keyTtlMs: Number(env.ONCE_CHECKOUT_KEY_TTL_MS ?? 86_400_000),
    // Retention plus two reaper periods: by then the processor has forgotten a key.
    ...(retention > 0 && {
      processorKeyForgetMs:
        retention + 2 * Number(env.PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS ?? 0) + 1_000,
    }),
    webUrl: system.webUrl,
    async kill(asked) {
      let name = asked;
      if (topology && asked === 'web') {
        name = standIn = tierOrder[tierKills++ % tierOrder.length]!;
        const busy = name.startsWith('web-') && (await untilBusy(name));
        counters[`killed_${name}${busy ? '_mid_request' : ''}`] =
          (counters[`killed_${name}${busy ? '_mid_request' : ''}`] ?? 0) + 1;
        log(`chaos     | kill_web: ${name}${busy ? ' while it answers a request' : ''}`);
      }
      if (down.has(name)) return;
      if (paused.has(name)) resumeWorker(name);
      down.add(name);
      await killPart(name);
    },
    restart: (name) => restart(topology && name === 'web' ? standIn : name),
    async pause(name, pauseOptions) {
      if (down.has(name) || paused.has(name)) return undefined;
      if (pauseOptions?.atNextClaim) {
        const stopped = await stopAtNextClaim(name);
        if (stopped) return stopped;
        if (down.has(name) || paused.has(name)) return undefined;
      }
      system.supervisor.signal(name, 'SIGSTOP');
      paused.add(name);
      return { worker: name };
    },
    async resume(name) {
      if (paused.has(name)) resumeWorker(name);
    },
    async crashRestartDatabase(how = 'immediate_shutdown') {
      databaseRestarting = true;
      try {
        await crashRestart(how);
      } finally {
        databaseRestarting = false;
      }
    },
    async failDatabaseOver(kind, downMs) {
      if (!ha) throw new Error(`${kind} needs a replicated cluster (the failover profile)`);
      // The same care as a crash: no pause holds a connection the failover breaks.
      databaseRestarting = true;
      try {
        await releasePausesFromDatabase();
        return await ha.inject(kind, downMs);
      } finally {
        databaseRestarting = false;
      }
    },
    async terminateBackends() {
      // Only backends pg_terminate_backend answered true for: it answers false (with a
      // warning) for a pid that is already gone, and count() would count that too.
      const [row] = await read(
        pg.adminUrl,
        (sql) => sql<{ n: number }[]>`
          select (count(*) filter (where pg_terminate_backend(pid)))::int as n from pg_stat_activity
          where pid <> pg_backend_pid() and backend_type = 'client backend'
            and datname in ('once', 'once_processor')
            and application_name <> ${NEMESIS_APPLICATION_NAME}`,
      );
      return row?.n ?? 0;
    },
    async armProcessorFault(plan: NemesisPlan) {
      const webhook = plan.kind === 'duplicate_webhook' || plan.kind === 'slow_webhook';
      const armed = await adminCall('POST', '/admin/faults', {
        account: plan.target,
        kind: plan.kind,
        count: plan.count,
        ...(webhook
          ? { path_prefix: 'payment_intent.' }
          : // The call that moves the money: the charge's confirm (never a cancel or a
            // create), or the operator's capture or refund the plan aims at.
            { operation: plan.operation ?? 'payment_intents.confirm' }),
        ...(plan.kind === 'delay' || plan.kind === 'slow_webhook'
          ? { delay_ms: plan.delayMs }
          : {}),
        ...(plan.kind === 'not_found'
          ? // A confirm charges, its answer fails, and for a while reads by id answer 404:
            // a 404 is no proof of "not charged", so only proof may settle the payment.
            {
              kind: 'fail_after_charge',
              lag_ms: plan.delayMs,
            }
          : {}),
      });
      return (armed as { id?: string } | undefined)?.id;
    },
    async heal() {
      await ha?.heal();
      for (const name of [...paused]) resumeWorker(name);
      for (const name of new Set(['processor', ...workerNames, ...system.webNames, ...tierOrder])) {
        if (down.has(name) || !system.supervisor.names.includes(name)) await restart(name);
      }
      await adminCall('DELETE', '/admin/faults');
    },
    async pendingPayments() {
      // Work still owed: a charge unanswered, or a capture, void or refund not final yet (an
      // authorised payment waits for its operator, who is done by now).
      const [row] = await read(
        databaseUrl,
        (sql) => sql<{ n: number }[]>`
          select ((select count(*) from payments
                  where status in ('processing', 'unknown', 'requires_action'))
               + (select count(*) from payment_actions where status in ('pending', 'unknown'))
               + (select count(*) from refunds where status in ('requested', 'pending', 'unknown'))
               )::int as n`,
      );
      return row?.n ?? 0;
    },
    async snapshot(): Promise<Snapshot> {
      if (topology) await readProxyStats();
      // Rows as the checker reads them: camelCase columns, times in epoch ms.
      const app = <T>(query: (sql: postgres.Sql) => Promise<T>) => read(databaseUrl, query);
      const payments = await app(
        (sql) => sql<AppPayment[]>`
        select tenant_id, id, status, amount, idempotency_key, downstream_key, capture_method,
          amount_captured, ${epochMs(sql, 'created_at')}, ${epochMs(sql, 'updated_at')},
          (select coalesce(sum(refund.amount), 0)::int from refunds as refund
            where refund.tenant_id = payment.tenant_id and refund.payment_id = payment.id
              and refund.status in ('pending', 'succeeded')) as amount_refunded
        from payments as payment`,
      );
      const refunds = await app(
        (sql) => sql<AppRefund[]>`
        select tenant_id, id, payment_id, amount, status, downstream_key, processor_refund_id,
          failure_code, ${epochMs(sql, 'created_at')}
        from refunds`,
      );
      const moneyActionKeys = await app(
        (sql) => sql<NonNullable<Snapshot['moneyActionKeys']>>`
        select tenant_id, key, kind, payment_id from money_action_keys`,
      );
      const jobs = await app(
        (sql) => sql<BackstageEvent[]>`
        select ${epochMs(sql, 'updated_at', 'at')}, payment_id,
          format('outbox job %s after %s attempt(s)%s%s', status, attempts,
            ', last by ' || locked_by, ' (' || last_error || ')') as what
        from outbox_jobs`,
      );
      const ledger = await read(
        processorDatabaseUrl,
        (sql) => sql<LedgerEntry[]>`
        select case kind when 'refund' then 'refund' else 'charge' end as kind, account_id,
          amount::float8 as amount, payment_intent_id, ${epochMs(sql, 'created_at')},
          idempotency_key, refund_id, metadata->>'tenant_id' as tenant_id,
          metadata->>'payment_id' as payment_id, metadata->>'downstream_key' as downstream_key
        from ledger_entries order by seq`,
      );
      const webhooks = await read(
        processorDatabaseUrl,
        (sql) => sql<BackstageEvent[]>`
        select * from (
          select ${epochMs(sql, 'created_at', 'at')},
            (payload::jsonb)->'data'->'object'->'metadata'->>'payment_id' as payment_id,
            format('webhook %s: %s delivery(ies), %s attempt(s)%s', type, deliveries, attempts,
              case when delivered_at is null then ', undelivered' end) as what
          from webhook_events) as webhook
        where payment_id <> ''`,
      ).catch(() => [] as BackstageEvent[]);
      // What each armed fault did (cleared faults stay on record at the processor): its uses
      // whose effect happened, not the requests that merely took it.
      const uses = (await adminCall('GET', '/admin/faults/uses')) as {
        data: { id: string; applied: number }[];
        applied_by_kind: Record<string, number>;
      };
      return {
        faultUses: {
          byId: Object.fromEntries(uses.data.map((f) => [f.id, f.applied])),
          byKind: uses.applied_by_kind,
        },
        payments,
        ledger,
        refunds,
        moneyActionKeys,
        backstage: [...jobs, ...webhooks],
        counters: {
          ...counters,
          ...Object.fromEntries([...answered].map(([web, n]) => [`answered_by_${web}`, n])),
        },
        ...(ha ? { failover: { mode: ha.mode, failovers: [...ha.failovers] } } : {}),
      };
    },
    onUnexpectedExit(listener) {
      exitListeners.push(listener);
    },
    /** Each web's requests answered through the proxy against the profile's floor. */
    topologyFloors() {
      if (!topology) return { line: undefined, shortfalls: [] };
      const counts = system.webNames.map((web) => [web, answered.get(web) ?? 0] as const);
      return {
        line: `answered through the proxy: ${counts.map(([w, n]) => `${w} ${n}`).join(', ')}; resent by it: ${counters.proxy_retries ?? 0}`,
        shortfalls: counts
          .filter(([, n]) => n < topology.answeredByEachWeb)
          .map(([web, n]) => `answered by ${web} ${n} < ${topology.answeredByEachWeb}`),
      };
    },
    async stop() {
      clearInterval(statsTimer);
      for (const name of [...paused]) system.supervisor.signal(name, 'SIGCONT');
      await system.stop();
      await ha?.stop();
      await pg.stop();
      await rm(dataDir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

/** Five attempts, a second apart, as the launcher's restart policy makes them. */
async function startWithRetries(start: () => Promise<void>, onRetry?: (error: Error) => void) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 5) throw error;
      onRetry?.(error as Error);
      await sleep(1_000);
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `column` as epoch milliseconds (what `Date.getTime()` gives), named `as` (default: itself). */
function epochMs(sql: postgres.Sql, column: string, as = column) {
  return sql`floor(extract(epoch from ${sql(column)}) * 1000)::float8 as ${sql(as)}`;
}

/** The index of `web` or `web-N` (its `startWeb` argument). */
const webIndex = (name: string) => Math.max(0, Number(name.slice(4) || 1) - 1);

/** `first` with one of `others` after each of its items, until both run out. */
function interleave(first: readonly string[], others: readonly string[]): string[] {
  return first.flatMap((item, i) => (others[i] ? [item, others[i]!] : [item]));
}
