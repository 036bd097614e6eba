import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { checkHistory, TERMINAL } from './checker.ts';
import { achieved, browserCustomersPaying, measureCoverage, shortfalls } from './coverage.ts';
import { tupleKey } from './group.ts';
import { History } from './history.ts';
import { runNemesis } from './nemesis.ts';
import { type RunSummary, runJunit, runReport, seconds, timelineSvg } from './report.ts';
import { type ChaosProfile, type IntentPlan, planRun } from './schedule.ts';
import type { AppPayment, ChaosTarget, ClientContext, Snapshot } from './target.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** After the heal, clients finish their retries and late duplicates within this. */
const CLIENT_GRACE_AFTER_HEAL_MS = 25_000;
/** How long a browser customer started past the clients' deadline (`runBrowserLanes`) may take. */
const LATE_CUSTOMER_MS = 60_000;

type RunArgs = { seed: number; profile: ChaosProfile };

interface RunOptions {
  outDir: string;
  /** The command that replays the run, for the report (default: the seed). */
  replay?: string;
  log?: (line: string) => void;
}

export interface ChaosRunResult extends RunSummary {
  outDir: string;
  /** The markdown report (also written to `<outDir>/report.md`). */
  markdown: string;
}

/**
 * One chaos run: plan, clients and nemesis during the fault phase, heal, the clients' last
 * retries, convergence, snapshot, check, report to `outDir`; the caller starts the target.
 *
 * @example
 * const target = await startOnceTarget({ profile: args.profile, browser });
 * try { const result = await runChaos(args, target, { outDir }); } finally { await target.stop(); }
 */
export async function runChaos(
  args: RunArgs,
  target: ChaosTarget,
  options: RunOptions,
): Promise<ChaosRunResult> {
  const run = setUpRun(args, target, options);
  const { plan, history } = run;
  const lanes = startClientsAndNemesis(run);
  const settled = await healAndConverge(run, lanes);
  const snapshot = await target.snapshot();
  const summary = summarizeRun(run, lanes, snapshot, settled);
  const markdown = runReport(summary, history.events, snapshot, history.startedAt);
  const json = (value: unknown) => JSON.stringify(value, null, 2);
  for (const [name, text] of Object.entries({
    'plan.json': json(plan),
    'snapshot.json': json(snapshot),
    'violations.json': json(summary.check.violations),
    'report.md': markdown,
    'junit.xml': runJunit(summary),
    'timeline.svg': timelineSvg(history.events),
  })) {
    writeFileSync(path.join(options.outDir, name), text);
  }
  return { ...summary, outDir: options.outDir, markdown };
}

/** The plan, and the history appended to `history.jsonl` as it happens (exits included). */
function setUpRun({ seed, profile }: RunArgs, target: ChaosTarget, options: RunOptions) {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  mkdirSync(options.outDir, { recursive: true });
  const plan = planRun(seed, profile, target.catalogues, target);
  const historyFile = path.join(options.outDir, 'history.jsonl');
  writeFileSync(historyFile, '');
  const history = new History(Date.now, (event) =>
    appendFileSync(historyFile, `${JSON.stringify(event)}\n`),
  );
  target.onUnexpectedExit((name, detail) =>
    history.lifecycle({ process: name, event: 'exited', detail }),
  );
  const replay = options.replay ?? `seed ${seed}`;
  return { plan, profile, target, history, log, replay };
}

type Run = ReturnType<typeof setUpRun>;

/** The fault phase: the nemesis, and every client starting when its intent is due. */
function startClientsAndNemesis({ plan, profile, target, history, log }: Run) {
  const catalogue = (tenantId: string) => target.catalogues.find((c) => c.tenantId === tenantId)!;
  history.mark('faults_start');
  const faultsStartAt = history.elapsed();
  const lanes = {
    faultsStartAt,
    // Clients stop retrying this long after the heal (unknown until the nemesis is done).
    clientDeadline: Number.MAX_SAFE_INTEGER,
    // Until this bound (set at the heal), customers start late while browser floors are short.
    workBoundAt: Number.MAX_SAFE_INTEGER,
    browserIntentsRun: 0,
    // What the browser customers did so far, for the floors they serve (`browserShort`).
    browserPaid: 0,
    lateCustomers: 0,
    // A crashed client is checked on what it sent, reported, and fails the run (`shortfalls`).
    clientCrashes: [] as string[],
  };
  const deadlineAt = () => lanes.clientDeadline;
  const ctx: ClientContext = { history, webUrl: () => target.webUrl, catalogue, sleep, deadlineAt };
  const { clients: drive } = target;
  const nemesis = runNemesis(plan.nemesis, target, history, { sleep, faultsStartAt });

  const startWhenDue = async (intent: IntentPlan) =>
    sleep(faultsStartAt + intent.startAtMs - history.elapsed());
  const http = plan.intents.filter((i) => i.transport !== 'browser');
  const browserIntents = plan.intents.filter((i) => i.transport === 'browser');
  const floors = profile.floors ?? {};
  const browserShort = () =>
    browserCustomersPaying(history.events) < (floors.browserStarted ?? 0) ||
    lanes.browserPaid < (floors.browserWithPayment ?? 0);
  const crashed = (who: string) => (error: unknown) => {
    const line = `${who} crashed: ${String(error).split('\n')[0]}`;
    lanes.clientCrashes.push(line);
    log(line);
  };
  const clients = Promise.all([
    Promise.all(
      http.map(async (intent) => {
        await startWhenDue(intent);
        await drive.http(intent, ctx).catch(crashed(`client ${intent.id}`));
      }),
    ),
    drive.browser
      ? runBrowserLanes(browserIntents, {
          concurrency: profile.browserConcurrency,
          startWhenDue,
          now: () => history.elapsed(),
          deadlineAt,
          boundAt: () => lanes.workBoundAt,
          short: browserShort,
          lateCustomerMs: LATE_CUSTOMER_MS,
          run: async (intent, customerDeadlineAt) => {
            lanes.browserIntentsRun++;
            const late = history.elapsed() > lanes.clientDeadline;
            if (late) lanes.lateCustomers++;
            const result = await drive.browser!(intent, {
              ...ctx,
              deadlineAt: customerDeadlineAt,
            }).catch(crashed(`browser ${intent.id}`));
            if (result?.paymentId) lanes.browserPaid++;
            if (late) lanes.lateCustomers--;
          },
        })
      : Promise.resolve(),
  ]);
  return Object.assign(lanes, { ctx, nemesis, clients, browserIntents: browserIntents.length });
}

type Lanes = ReturnType<typeof startClientsAndNemesis>;

/** The end of the fault phase, the heal, the clients' last retries, and convergence. */
async function healAndConverge({ plan, profile, target, history, log }: Run, lanes: Lanes) {
  // Every planned fault fires, even when restarts made the nemesis run late.
  await sleep(lanes.faultsStartAt + profile.durationMs - history.elapsed());
  await lanes.nemesis;
  history.mark('heal_start');
  log(`chaos: heal at ${seconds(history.elapsed())}`);
  await target.heal();
  log(`chaos: healed at ${seconds(history.elapsed())}; clients finish their retries`);
  const healAt = history.elapsed();
  history.mark('healed');
  lanes.clientDeadline = healAt + CLIENT_GRACE_AFTER_HEAL_MS;
  lanes.workBoundAt = healAt + (profile.floorBoundMs ?? 0);
  // A client still busy well past its deadline (a late customer: past the bound) is abandoned
  // (and said so), never waited on forever.
  const abandonAt = () =>
    lanes.lateCustomers > 0
      ? lanes.workBoundAt + CLIENT_GRACE_AFTER_HEAL_MS
      : lanes.clientDeadline + CLIENT_GRACE_AFTER_HEAL_MS;
  const abandoned = await Promise.race([
    lanes.clients.then(() => false),
    (async () => {
      while (history.elapsed() < abandonAt()) await sleep(500);
      return true;
    })(),
  ]);
  if (abandoned) {
    log('chaos: some clients were still busy long after the heal; abandoned them');
    // Their pages are closed (a request still open completes as `info`) and the run waits
    // for them to return: nothing a client does may land after the databases are read.
    await target.clients.abandon?.();
    await Promise.race([lanes.clients, sleep(15_000)]);
  }
  const { clients: drive } = target;
  if (profile.replication && drive.returning) {
    for (const line of await drive.returning(plan.intents, lanes.ctx)) log(`chaos: ${line}`);
  }
  log(`chaos: clients done at ${seconds(history.elapsed())}; waiting for convergence`);
  const convergeDeadline = history.elapsed() + profile.convergeTimeoutMs;
  while (
    history.elapsed() < convergeDeadline &&
    (await target.pendingPayments().catch(() => 1)) > 0
  )
    await sleep(500);
  history.mark('converged');
  return { healAt, convergedAfterHealMs: history.elapsed() - healAt };
}

/** The check, the coverage and what the intents reached, against the run's floors. */
function summarizeRun(
  { plan, profile, target, history, replay }: Run,
  lanes: Lanes,
  snapshot: Snapshot,
  { healAt, convergedAfterHealMs }: { healAt: number; convergedAfterHealMs: number },
): RunSummary {
  const check = checkHistory({
    intents: plan.intents.map((i) => ({
      id: i.id,
      tenantId: i.tenantId,
      amount: i.amount,
      reuseAmount: i.reuseKeyWithOtherCart ? i.reuseAmount : undefined,
      declinedCard: i.paymentMethod !== 'pm_card_visa',
    })),
    events: history.events,
    snapshot,
    healAt,
    startedAt: history.startedAt,
  });
  const coverage = measureCoverage(history.events, snapshot, profile.faults, {
    keyTtlMs: target.keyTtlMs,
    startedAt: history.startedAt,
  });
  // Each intent's payment: the one of the first key its clients sent that holds one.
  const paymentOfKey = new Map(
    snapshot.payments.map((p) => [tupleKey(p.tenantId, p.idempotencyKey), p]),
  );
  const paymentOfIntent = new Map<string, AppPayment>();
  for (const e of history.events) {
    if (!('op' in e) || paymentOfIntent.has(e.intent)) continue;
    const payment = paymentOfKey.get(tupleKey(e.tenantId, e.key));
    if (payment) paymentOfIntent.set(e.intent, payment);
  }
  const reached = plan.intents.map((i) => paymentOfIntent.get(i.id));
  const withPayment = reached.filter(Boolean).length;
  const isBrowser = (i: number) => plan.intents[i]!.transport === 'browser';
  const browserWithPayment = reached.filter((p, i) => p && isBrowser(i)).length;
  const work = achieved(coverage, { withPayment, browserWithPayment });
  const { clientCrashes } = lanes;
  // Whatever the profile's floors (resizing a run drops them): a run that charged nothing,
  // such as one whose processor refused every charge, proved nothing about charges.
  const floors = { charges: 1, ...profile.floors };
  return {
    withPayment,
    browserWithPayment,
    achieved: work,
    floors,
    clientCrashes,
    shortfalls: shortfalls(work, floors, clientCrashes),
    browserSucceeded: reached.filter((p, i) => p?.status === 'succeeded' && isBrowser(i)).length,
    terminal: reached.filter((p) => p && TERMINAL.has(p.status)).length,
    seed: plan.seed,
    profile: profile.name,
    replay,
    intents: plan.intents.length,
    browserIntents: lanes.browserIntents,
    browserIntentsRun: lanes.browserIntentsRun,
    durationMs: history.elapsed(),
    convergedAfterHealMs,
    check,
    coverage,
  };
}

/**
 * Browser customers, `concurrency` pages at a time, each started no earlier than its planned
 * time, until the clients' deadline. A floor measures the work, not the machine: past the
 * deadline a customer still starts while the run is `short` of its floors, until `boundAt`.
 */
export async function runBrowserLanes<T>(
  customers: readonly T[],
  options: {
    concurrency: number;
    startWhenDue: (customer: T) => Promise<void>;
    now: () => number;
    /** Past this (ms since the run began) clients stop; unknown (very large) until the heal. */
    deadlineAt: () => number;
    /** Past this no customer starts or goes on; unknown (very large) until the heal. */
    boundAt: () => number;
    /** Whether the run is still short of the work its browser floors ask. */
    short: () => boolean;
    /** How long a customer started past the deadline may take. */
    lateCustomerMs: number;
    run: (customer: T, deadlineAt: () => number) => Promise<void>;
  },
): Promise<{ letIn: number; late: number }> {
  let next = 0;
  let letIn = 0;
  let late = 0;
  const lane = async () => {
    while (next < customers.length) {
      const customer = customers[next++]!;
      await options.startWhenDue(customer);
      const now = options.now();
      if (now <= options.deadlineAt()) {
        letIn++;
        await options.run(customer, options.deadlineAt);
        continue;
      }
      if (!options.short() || now >= options.boundAt()) continue;
      letIn++;
      late++;
      const own = now + options.lateCustomerMs;
      await options.run(customer, () => Math.min(own, options.boundAt()));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, lane));
  return { letIn, late };
}
