import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { History } from './history.ts';
import type { IntentPlan, NemesisPlan, PlanTimings, TenantCatalogue } from './schedule.ts';

// The seam: what a team implements (`ChaosTarget`) to point the engine at its own stack, and
// the facts it hands back after a run (`Snapshot`).

/**
 * What the engine needs from a system under test: its clients, its parts to kill, pause and
 * restart, the faults it can arm, and how to read its books and its processor's ledger.
 */
export interface ChaosTarget extends PlanTimings {
  clients: ChaosClients;
  /** The tenants clients buy from. */
  catalogues: readonly TenantCatalogue[];
  /** How long the app keeps a checkout key: late duplicates past it cross an expiry. */
  keyTtlMs: number;
  /** Base URL clients send to (changes never; restarts keep the port). */
  webUrl: string;
  /** Kill a part (`web`, `processor`, `worker-N`) as a crash does; `restart` waits for health. */
  kill(name: string): Promise<void>;
  restart(name: string): Promise<void>;
  /**
   * Stop / continue a part. With `atNextClaim`, the stop waits (10 s at most) for any worker
   * to claim a job and lands before its processor call, where a stall matters; resolves with
   * the worker stopped (resume that one) and its job, undefined if nothing was stopped.
   */
  pause(
    name: string,
    options?: { atNextClaim?: boolean },
  ): Promise<{ worker: string; job?: string } | undefined>;
  resume(name: string): Promise<void>;
  /** Crash the database (immediate shutdown, or the postmaster killed as the OOM killer does). */
  crashRestartDatabase(how?: DatabaseCrash): Promise<void>;
  /** Terminate every client backend once; returns how many `pg_terminate_backend` ended. */
  terminateBackends(): Promise<number>;
  /** A failover on a replicated app database; resolves once healthy, with how much it bit. */
  failDatabaseOver?(
    kind: FailoverFaultKind,
    downMs: number,
  ): Promise<{ detail: string; bit: number }>;
  /** Arm a processor fault for one account; resolves with its id (`snapshot()` counts its uses). */
  armProcessorFault(plan: NemesisPlan): Promise<string | undefined>;
  /** Every part that should be up, is up (restart the dead, resume the stopped), faults off. */
  heal(): Promise<void>;
  /** Payments that are not terminal yet (the system has not converged while > 0). */
  pendingPayments(): Promise<number>;
  /** The app's books and the processor's ledger, read after the run. */
  snapshot(): Promise<Snapshot>;
  /** Called by the target when a process exits without the nemesis asking. */
  onUnexpectedExit(listener: (name: string, detail: string) => void): void;
  stop(): Promise<void>;
}

/** The clients that drive a target's checkout, each request recorded in `ctx.history`. */
export interface ChaosClients {
  /** One customer paying over HTTP, then its operator's capture, void or refunds. */
  http(intent: IntentPlan, ctx: ClientContext): Promise<unknown>;
  /** One customer in a browser page, and the payment it made (absent: no browser customers). */
  browser?(intent: IntentPlan, ctx: ClientContext): Promise<{ paymentId?: string } | undefined>;
  /** Closes the pages of customers still busy long after the heal: nothing may land later. */
  abandon?(): Promise<void>;
  /** After a failover run: clients who find an acknowledged write gone come back for it. */
  returning?(intents: readonly IntentPlan[], ctx: ClientContext): Promise<string[]>;
}

/** What a target's clients share: the run's history and clock, the web, the catalogues. */
export interface ClientContext {
  history: History;
  webUrl: () => string;
  catalogue: (tenantId: string) => TenantCatalogue;
  sleep: (ms: number) => Promise<void>;
  /** Past this point (ms since run start) the client stops, whatever it holds. */
  deadlineAt: () => number;
}

/** Both databases read after the run: the facts the checker decides from. */
export interface Snapshot {
  payments: AppPayment[];
  ledger: LedgerEntry[];
  /** The app's refunds (absent: a target whose schedule refunds nothing). */
  refunds?: AppRefund[];
  /**
   * Which money action each operator key made (absent: a target that cannot tell): one per
   * (tenant, key), whatever the transport.
   */
  moneyActionKeys?: { tenantId: string; key: string; kind: string; paymentId: string }[];
  /** Outbox job attempts, webhook deliveries, ...: shown in timelines only. */
  backstage: BackstageEvent[];
  /** Counters only the system can tell (lease takeovers, replays served, ...). */
  counters: Record<string, number>;
  /**
   * Requests (or deliveries) each armed fault took effect on, by the id `armProcessorFault`
   * returned and per kind (a fault armed but never matched did not fire).
   */
  faultUses?: { byId: Record<string, number>; byKind: Record<string, number> };
  /** A replicated app database: its mode and every failover the nemesis made. */
  failover?: { mode: string; failovers: FailoverRecord[] };
}

/** A payment as the application's database holds it. */
export interface AppPayment {
  tenantId: string;
  id: string;
  status: string;
  amount: number;
  /** A captured payment's captured amount (its one charge is of it); absent otherwise. */
  amountCaptured?: number | null;
  /** What the app holds refunded (its refunds the processor took); absent: none. */
  amountRefunded?: number;
  /** `manual`: an authorisation the operator captures or voids; absent: `automatic`. */
  captureMethod?: string;
  idempotencyKey: string;
  /** The key its charge is sent to the processor with (a payment re-created after a lost commit shares it). */
  downstreamKey?: string;
  createdAt: number;
  updatedAt: number;
}

/** A refund as the application's database holds it. */
export interface AppRefund {
  tenantId: string;
  id: string;
  paymentId: string;
  amount: number;
  /** requested | pending | succeeded | failed | unknown */
  status: string;
  /** The key the worker sends it with (the ledger row's `idempotencyKey`). */
  downstreamKey: string;
  /** The processor's refund, once an answer named it. */
  processorRefundId: string | null;
  /** Why a failed refund failed (the processor's refusal code), if it did. */
  failureCode?: string | null;
  /** When the row was written (epoch ms). */
  createdAt?: number;
}

/** One money movement in the processor's ledger, attributed through its metadata. */
export interface LedgerEntry {
  kind: 'charge' | 'refund';
  accountId: string;
  tenantId: string | null;
  paymentId: string | null;
  amount: number;
  paymentIntentId: string;
  createdAt: number;
  /** The `Idempotency-Key` of the request that moved the money (a refund's downstream key). */
  idempotencyKey?: string | null;
  /** A refund row's processor refund id (`re_...`). */
  refundId?: string | null;
  /** The charge's payment intent's `downstream_key` metadata (absent for refunds). */
  downstreamKey?: string | null;
}

/** Something that happened to a payment behind the scenes, for violation timelines. */
export interface BackstageEvent {
  at: number;
  paymentId: string;
  what: string;
}

/** Faults on a target's own parts: its processes and its database. */
export const SYSTEM_FAULT_KINDS = [
  'kill_web',
  'kill_worker',
  'kill_processor',
  'pause_worker',
  'pg_crash_restart',
  'pg_terminate_storm',
] as const;

/**
 * Faults on a replicated app database (`failDatabaseOver`): the primary killed or stopped, a
 * switchover, and COMMITs cancelled while they wait for the synchronous standby.
 */
export const FAILOVER_FAULT_KINDS = [
  'pg_kill_primary',
  'pg_stop_primary',
  'pg_switchover',
  'pg_sync_cancel',
] as const;
export type FailoverFaultKind = (typeof FAILOVER_FAULT_KINDS)[number];

/** Whether the target arms `kind` at its processor: neither a system nor a failover fault. */
export const isArmedFault = (kind: string): boolean =>
  !([...SYSTEM_FAULT_KINDS, ...FAILOVER_FAULT_KINDS] as readonly string[]).includes(kind);

/** One failover as the nemesis saw it. */
export interface FailoverRecord {
  kind: FailoverFaultKind;
  from: string;
  to: string;
  /** Per table: rows the old primary held, absent on the new primary. */
  lost: Record<'payments' | 'refunds' | 'payment_actions', LostRow[]>;
}

/** A row the old primary held and the new one does not, with when it was written. */
export interface LostRow {
  id: string;
  /** Its `created_at` (epoch ms): a row back under its id with another one was made again. */
  createdAt: number;
}

/** How the nemesis crashes PostgreSQL. */
export type DatabaseCrash = 'immediate_shutdown' | 'kill_postmaster';

/** A part the nemesis may kill, pause and restart: a process group, a compose service, a unit. */
export type Part =
  | { pid: () => number; start: () => Promise<void> }
  | { compose: string; file?: string }
  | { systemd: string };

/**
 * How the nemesis kills, restarts, pauses and resumes a part: signals to the process group,
 * `docker compose`, or `systemctl` (a target's `restart` then waits for the part's health).
 */
export function controlPart(
  part: Part,
): Record<'kill' | 'restart' | 'pause' | 'resume', () => Promise<void>> {
  const run = async (command: string, args: string[]) => {
    await promisify(execFile)(command, args);
  };
  if ('pid' in part) {
    const signal = async (name: NodeJS.Signals) => {
      process.kill(-part.pid(), name);
    };
    return {
      kill: () => signal('SIGKILL'),
      restart: part.start,
      pause: () => signal('SIGSTOP'),
      resume: () => signal('SIGCONT'),
    };
  }
  if ('compose' in part) {
    const file = part.file ? ['-f', part.file] : [];
    const compose = (verb: string) => run('docker', ['compose', ...file, verb, part.compose]);
    return {
      kill: () => compose('kill'),
      restart: () => compose('start'),
      pause: () => compose('pause'),
      resume: () => compose('unpause'),
    };
  }
  const systemctl = (...args: string[]) => run('systemctl', [...args, part.systemd]);
  return {
    kill: () => systemctl('kill', '--signal=SIGKILL'),
    restart: () => systemctl('restart'),
    pause: () => systemctl('kill', '--signal=SIGSTOP'),
    resume: () => systemctl('kill', '--signal=SIGCONT'),
  };
}
