import { type ChaosProfile, FAILOVER_FAULT_KINDS, SYSTEM_FAULT_KINDS } from '@once/chaos';
import { FAULT_KINDS as PROCESSOR_FAULT_KINDS } from '@once/processor/fault-kinds';
import { REPLICATION_MODES, type ReplicationMode } from '@once/scripts/patroni-config';

/**
 * Every fault the nemesis knows for Once: its processes' and database's, and those its
 * processor arms itself. A `ci` run must fire each at least once: a nemesis that never bites
 * proves nothing. The order is the schedule's draw order.
 */
const FAULT_KINDS = [...SYSTEM_FAULT_KINDS, ...PROCESSOR_FAULT_KINDS] as const;
type FaultKind = (typeof FAULT_KINDS)[number] | (typeof FAILOVER_FAULT_KINDS)[number];

/** Once's profiles: the app's database is a Patroni cluster in this mode (`failover`). */
export interface OnceProfile extends ChaosProfile {
  replication?: ReplicationMode;
  /**
   * Several webs behind HAProxy with its resend on, PgBouncer in transaction mode in front of
   * PostgreSQL: `kill_web` then kills one of the webs mid-request, or the proxy, or the pooler.
   */
  topology?: {
    webs: number;
    /** The least each web must have answered through the proxy (a floor, as `floors`). */
    answeredByEachWeb: number;
  };
}

/** Faults the embedded server alone can take: the failover profile's database is a cluster. */
const SINGLE_SERVER_ONLY: readonly FaultKind[] = ['pg_crash_restart', 'pg_terminate_storm'];

/** Short windows for chaos runs, so leases, retention and reconciliation all happen within one. */
const SHORT_WINDOWS: Record<string, string> = {
  WORKER_LEASE_MS: '3000',
  WORKER_POLL_INTERVAL_MS: '300',
  WORKER_BACKOFF_BASE_MS: '200',
  WORKER_BACKOFF_MAX_MS: '1500',
  WORKER_RECONCILE_AFTER_MS: '4000',
  WORKER_RECONCILE_INTERVAL_MS: '1000',
  WORKER_WEBHOOK_BACKFILL_INTERVAL_MS: '2000',
  WORKER_SWEEP_INTERVAL_MS: '1000',
  WORKER_PROCESSOR_TIMEOUT_MS: '4000',
  // An undecided payment (a lookup refused, an intent in flight) is checked again within
  // seconds, not the production minute: otherwise one refused lookup outlives the heal.
  WORKER_RECONCILE_BACKOFF_BASE_MS: '1000',
  WORKER_RECONCILE_BACKOFF_MAX_MS: '4000',
  ONCE_CHECKOUT_KEY_TTL_MS: '20000',
  // Shorter than a long worker pause (see the schedule): a stalled worker wakes up after the
  // processor forgot its keys, the race the two-step charge and the lease fence close.
  PROCESSOR_IDEMPOTENCY_RETENTION_MS: '10000',
  PROCESSOR_IDEMPOTENCY_REAP_INTERVAL_MS: '2000',
  PROCESSOR_IDEMPOTENCY_LEASE_MS: '5000',
  PROCESSOR_WEBHOOK_BACKOFF_MS: '300',
  // An authorisation nobody captures expires within the run (the `expire` flow waits past it);
  // not shorter, as under load a capture job waits tens of seconds.
  PROCESSOR_AUTHORIZATION_WINDOW_MS: '30000',
  // A 3-D Secure challenge left unanswered is canceled within the run; not shorter, as on a
  // loaded machine a shopper's reads are slow enough to find most challenges canceled.
  WORKER_CHALLENGE_ABANDON_MS: '40000',
};

/**
 * Money flows of a run: three in ten authorise, a quarter of those paid are refunded, one in
 * seven automatic card checkouts meets 3-D Secure, and three in five operator flows are rude.
 */
const MONEY_FLOWS = {
  manualShare: 0.3,
  refundShare: 0.25,
  faults: 6,
  threeDSecureShare: 0.15,
  rudeShare: 0.6,
};

export const PROFILES: Record<string, OnceProfile> = {
  /** Inside `npm test`: every fault kind, >= 120 checkouts (>= 20 in a browser), a few minutes. */
  ci: {
    name: 'ci',
    intents: 124,
    // More than the 20 the suite promises: a declined card still checks out, but a customer
    // who finds the shop down for long may leave before paying.
    browserIntents: 28,
    durationMs: 90_000,
    nemesisEvents: 32,
    faults: FAULT_KINDS,
    workers: 2,
    // Each customer can take 30-60 s on a loaded machine (it retries until terminal).
    browserConcurrency: 6,
    // Customers not started by the clients' deadline start then, while the browser floors are
    // short, for two minutes more.
    floorBoundMs: 120_000,
    convergeTimeoutMs: 60_000,
    env: SHORT_WINDOWS,
    moneyFlows: MONEY_FLOWS,
    // The least a ci run must do: below any of these it proves too little and fails, whatever
    // the checker says (docs/chaos.md, "Results", gives what runs reach beside each floor).
    floors: {
      intentsWithPayment: 60,
      browserStarted: 20,
      browserWithPayment: 15,
      requestsOk: 60,
      killsInAmbiguityWindow: 1,
      lostResponsesCommitted: 3,
      leaseTakeovers: 5,
      expiriesCrossed: 2,
      // The operator's money flows ran: a payment captured, refunds the processor took.
      captures: 1,
      refunds: 2,
      // A 3-D Secure shopper answered or left the bank's challenge.
      threeDSecure: 1,
    },
  },
  /** A laptop or a nightly job: thousands of checkouts. */
  soak: {
    name: 'soak',
    intents: 2000,
    browserIntents: 100,
    durationMs: 900_000,
    nemesisEvents: 300,
    faults: FAULT_KINDS,
    workers: 3,
    // A browser customer takes 30-60 s under faults: six at a time fit all 100 in the run.
    browserConcurrency: 6,
    convergeTimeoutMs: 180_000,
    env: SHORT_WINDOWS,
    moneyFlows: { ...MONEY_FLOWS, faults: 40 },
  },
  /**
   * The app's database on a replicated cluster (`--mode sync|async|strict`, default sync),
   * failed over under checkout traffic, with process kills and the processor's faults. Every
   * failover kind first, so each is scheduled; the cluster is heavy, so the run is small.
   * No worker pauses: they hold a database lock the failover would break under them.
   */
  failover: {
    name: 'failover',
    intents: 40,
    browserIntents: 2,
    durationMs: 120_000,
    nemesisEvents: 10,
    faults: [
      ...FAILOVER_FAULT_KINDS,
      'kill_worker',
      'kill_web',
      'kill_processor',
      ...PROCESSOR_FAULT_KINDS,
    ],
    workers: 2,
    browserConcurrency: 1,
    // Failovers of a loaded machine take tens of seconds each; the clients' retries follow.
    convergeTimeoutMs: 120_000,
    env: SHORT_WINDOWS,
    moneyFlows: { ...MONEY_FLOWS, faults: 2 },
    replication: 'sync',
  },
  /**
   * Three webs behind HAProxy, which resends a request a web died on to another web (a POST
   * included), and PgBouncer in transaction mode: the nemesis kills a web while it answers a
   * request, or the proxy, or the pooler, and restarts it; with the processor's faults.
   */
  topology: {
    name: 'topology',
    intents: 60,
    browserIntents: 0,
    durationMs: 60_000,
    nemesisEvents: 20,
    // Each part of the web tier (web-1..3, the proxy, the pooler: in turn) at least once.
    faults: [
      ...Array<'kill_web'>(5).fill('kill_web'),
      'kill_worker',
      'kill_processor',
      ...PROCESSOR_FAULT_KINDS,
    ],
    workers: 2,
    browserConcurrency: 1,
    convergeTimeoutMs: 90_000,
    env: SHORT_WINDOWS,
    moneyFlows: { ...MONEY_FLOWS, faults: 2 },
    topology: { webs: 3, answeredByEachWeb: 20 },
    floors: { intentsWithPayment: 30, requestsOk: 40 },
  },
  /** While developing the suite itself: small and quick. */
  dev: {
    name: 'dev',
    intents: 30,
    browserIntents: 4,
    durationMs: 40_000,
    nemesisEvents: 12,
    faults: FAULT_KINDS,
    workers: 2,
    browserConcurrency: 1,
    convergeTimeoutMs: 60_000,
    env: SHORT_WINDOWS,
    moneyFlows: { ...MONEY_FLOWS, faults: 2 },
  },
};

export interface ChaosArgs {
  seed: number;
  /** The named profile the run started from (`ci`, `soak`, `dev`). */
  profileName: string;
  profile: OnceProfile;
  /** Where the history, report and timeline go. */
  outDir?: string;
}

/**
 * Reads `--seed N --profile ci|soak|failover|topology|dev --intents N --browser N --duration SECONDS
 * --events N --faults kill_web,delay --out DIR`. Bad input throws one clear message.
 */
export function parseChaosArgs(argv: readonly string[]): ChaosArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') continue;
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unexpected argument ${arg} (see e2e/README.md, "Chaos")`);
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${match[1]} needs a value`);
    values.set(match[1]!, value);
  }
  const known = [
    ...['seed', 'profile', 'intents', 'browser', 'duration', 'events', 'faults', 'out'],
    'mode',
  ];
  for (const name of values.keys()) {
    if (!known.includes(name))
      throw new Error(`unknown option --${name} (known: ${known.join(', ')})`);
  }
  const profileName = values.get('profile') ?? 'ci';
  const base = PROFILES[profileName];
  if (!base)
    throw new Error(`unknown profile ${profileName} (known: ${Object.keys(PROFILES).join(', ')})`);
  const int = (name: string): number | undefined => {
    const raw = values.get(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
    return n;
  };
  const faults = values.get('faults')?.split(',').filter(Boolean);
  const knownFaults: readonly string[] = [...FAULT_KINDS, ...FAILOVER_FAULT_KINDS];
  for (const f of faults ?? []) {
    if (!knownFaults.includes(f))
      throw new Error(`unknown fault ${f} (known: ${knownFaults.join(', ')})`);
  }
  const mode = values.get('mode');
  if (mode !== undefined && !base.replication)
    throw new Error(`--mode needs a replicated database (--profile failover)`);
  if (mode !== undefined && !REPLICATION_MODES.includes(mode as ReplicationMode))
    throw new Error(`--mode must be one of ${REPLICATION_MODES.join(', ')}`);
  const replication = (mode as ReplicationMode | undefined) ?? base.replication;
  for (const f of faults ?? []) {
    if (replication && SINGLE_SERVER_ONLY.includes(f as FaultKind))
      throw new Error(`${f} crashes the embedded server; the failover profile's is a cluster`);
    if (!replication && FAILOVER_FAULT_KINDS.includes(f as never))
      throw new Error(`${f} needs a replicated database (--profile failover)`);
  }
  const profile: OnceProfile = {
    ...base,
    intents: int('intents') ?? base.intents,
    durationMs: (int('duration') ?? base.durationMs / 1000) * 1000,
    nemesisEvents: int('events') ?? base.nemesisEvents,
    // No COMMIT waits for a standby in async mode: there is nothing to cancel.
    faults: ((faults as FaultKind[] | undefined) ?? base.faults).filter(
      (f) => replication !== 'async' || f !== 'pg_sync_cancel',
    ),
    replication,
  };
  profile.browserIntents = Math.min(int('browser') ?? base.browserIntents, profile.intents);
  const overridden = ['intents', 'browser', 'duration', 'events', 'faults'].some((k) =>
    values.has(k),
  );
  if (overridden) {
    profile.name = `${base.name}+custom`;
    // Sized for the profile as planned: a smaller run cannot be held to them.
    profile.floors = undefined;
  }
  // A run not given a seed draws one (and prints it: the replay command names it).
  const seed = int('seed') ?? Math.floor(Math.random() * 2 ** 31);
  return { seed, profileName, profile, outDir: values.get('out') };
}

/** The command that replays a run exactly. */
export function replayCommand(args: ChaosArgs): string {
  const p = args.profile;
  const base = PROFILES[args.profileName]!;
  const parts = [`npm run chaos -- --seed ${args.seed} --profile ${args.profileName}`];
  if (p.intents !== base.intents) parts.push(`--intents ${p.intents}`);
  if (p.browserIntents !== base.browserIntents) parts.push(`--browser ${p.browserIntents}`);
  if (p.durationMs !== base.durationMs) parts.push(`--duration ${p.durationMs / 1000}`);
  if (p.nemesisEvents !== base.nemesisEvents) parts.push(`--events ${p.nemesisEvents}`);
  if (p.replication !== base.replication) parts.push(`--mode ${p.replication}`);
  const baseFaults = base.faults.filter((f) => p.replication !== 'async' || f !== 'pg_sync_cancel');
  if (p.faults.join() !== baseFaults.join()) parts.push(`--faults ${p.faults.join(',')}`);
  return parts.join(' ');
}
