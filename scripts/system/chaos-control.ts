import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CHAOS_PRESS_COOLDOWN_MS,
  type ChaosPart,
  LAUNCHER_SWITCHES,
  type LauncherSwitchName,
  PressCooldown,
} from '@once/web/demo';
import { type ClusterControl, ClusterNotReady } from './cluster-parts.ts';
import type { PartStatus, Supervisor } from './supervisor.ts';

/**
 * The launcher's side of the demo's chaos switches: an HTTP control channel on loopback only,
 * guarded by a per-run secret that only the web process is told (ONCE_CHAOS_URL,
 * ONCE_CHAOS_SECRET). It acts on real processes (SIGKILL, SIGSTOP/SIGCONT, a PostgreSQL
 * crash, a cluster's failover); a kill asked for here never spends the crash-loop budget.
 * Presses are bounded here too, whatever the web forgot in a restart: one press of a switch
 * per cooldown (429 + `retryAfterSeconds`), one paused worker at a time, each pause ending by
 * itself, and the next one waiting until that worker has run as long again.
 *
 *   GET  /parts                  -> { parts: PartStatus[] (+ paused, + the cluster's nodes) }
 *   GET  /switches               -> { switches: the launcher switches this launcher works }
 *   POST /switches/<switch>[?target=worker-2]  -> { switch, did } | 409/429 { error[, retryAfterSeconds] }
 *
 * Every request needs `Authorization: Bearer <secret>`; anything else is 401.
 */
/** A part's state as the cockpit shows it: the supervisor's, with `paused` on top. */
interface ChaosPartStatus extends Omit<PartStatus, 'state'> {
  state: PartStatus['state'] | 'paused';
  /** What the part is, for those the name does not say (`--webs`: the proxy, the pooler). */
  role?: string;
  /** While paused: when it is resumed (ISO). */
  resumesAt?: string;
}

export interface ChaosControlOptions {
  supervisor: Supervisor;
  /** How long `pause_worker` stops a worker: its lease plus a margin, so the lease runs out. */
  pauseMs: number;
  /** Delay between answering and killing the web process, so the answer gets out first. */
  killWebDelayMs?: number;
  /** Least ms between two presses of a switch; default `CHAOS_PRESS_COOLDOWN_MS` (tests: less). */
  cooldownMs?: Partial<Record<LauncherSwitchName, number>>;
  /** The replicated database (`--ha`); unset: embedded PostgreSQL or your own. */
  cluster?: ClusterControl;
  log?: (line: string) => void;
}

export interface ChaosControl {
  url: string;
  secret: string;
  /** Resumes paused workers and closes the channel. */
  close(): Promise<void>;
}

/** The web tier's parts besides the webs (`npm run demo -- --webs N`), in the cockpit's words. */
const PART_ROLES: Record<string, string> = {
  proxy: 'HAProxy, the public URL',
  pooler: 'PgBouncer, transaction mode',
};

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Opens the control channel on loopback; the secret leaves the launcher only for the web. */
export async function startChaosControl(options: ChaosControlOptions): Promise<ChaosControl> {
  const { supervisor } = options;
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const secret = randomBytes(32).toString('hex');
  const expected = digest(`Bearer ${secret}`);
  const cooldown = new PressCooldown();
  const cooldownMs = (name: LauncherSwitchName) => {
    const base = options.cooldownMs?.[name] ?? CHAOS_PRESS_COOLDOWN_MS[name];
    // The next pause waits until the last paused worker has run as long as it was stopped.
    return name === 'pause_worker' ? Math.max(base, 2 * options.pauseMs) : base;
  };

  // A cluster's database is failed over, never crash-restarted in place (it is no single part).
  const switches = LAUNCHER_SWITCHES.filter((name) =>
    options.cluster ? name !== 'pg_crash_restart' : name !== 'db_failover',
  );

  const { paused, resume, press } = switchActions(options, log);

  const processParts = (): ChaosPartStatus[] =>
    supervisor.status().map((part) => {
      const pause = paused.get(part.name);
      const p = PART_ROLES[part.name] ? { ...part, role: PART_ROLES[part.name] } : part;
      return pause && p.state === 'up'
        ? { ...p, state: 'paused', resumesAt: new Date(pause.until).toISOString() }
        : p;
    });
  const parts = async (): Promise<ChaosPart[]> => [
    ...(options.cluster ? await options.cluster.parts() : []),
    ...processParts(),
  ];

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      answer(res, 500, { error: error instanceof Error ? error.message : String(error) });
    });
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const given = digest(req.headers.authorization ?? '');
    if (!timingSafeEqual(given, expected)) return answer(res, 401, { error: 'unauthorized' });
    req.resume();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/parts')
      return answer(res, 200, { parts: await parts() });
    if (req.method === 'GET' && url.pathname === '/switches') return answer(res, 200, { switches });
    const match = /^\/switches\/([a-z_]+)$/.exec(url.pathname);
    if (req.method === 'POST' && match) {
      const name = match[1] as LauncherSwitchName;
      if (!LAUNCHER_SWITCHES.includes(name)) {
        return answer(res, 404, { error: `no switch named ${name}` });
      }
      const now = Date.now();
      const waitMs = cooldown.take(name, cooldownMs(name), now);
      if (waitMs !== undefined) {
        const retryAfterSeconds = Math.ceil(waitMs / 1000);
        return answer(res, 429, {
          error: `${name} was pressed moments ago; press it again in ${retryAfterSeconds} s`,
          retryAfterSeconds,
        });
      }
      try {
        const did = await press(name, url.searchParams.get('target'));
        log(`chaos     | ${name}: ${did}`);
        return answer(res, 200, { switch: name, did });
      } catch (error) {
        cooldown.release(name, now);
        if (!(error instanceof SwitchRefused)) throw error;
        const { message, retryAfterSeconds } = error;
        if (retryAfterSeconds === undefined) return answer(res, 409, { error: message });
        return answer(res, 429, { error: message, retryAfterSeconds });
      }
    }
    return answer(res, 404, { error: 'not found' });
  };

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secret,
    close: async () => {
      for (const name of [...paused.keys()]) resume(name);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What each switch does to the parts, and the workers it keeps paused meanwhile. */
function switchActions(options: ChaosControlOptions, log: (line: string) => void) {
  const { supervisor } = options;
  const paused = new Map<string, { until: number; timer: NodeJS.Timeout }>();
  const upWorkers = () =>
    supervisor
      .status()
      .filter((p) => p.name.startsWith('worker-') && p.state === 'up' && !paused.has(p.name));

  const resume = (name: string) => {
    const entry = paused.get(name);
    if (!entry) return;
    clearTimeout(entry.timer);
    paused.delete(name);
    try {
      supervisor.signal(name, 'SIGCONT');
      log(`chaos     | ${name} resumed (SIGCONT)`);
    } catch {
      // It died while paused; the restart policy has it.
    }
  };

  /** The asked worker if it is up (a job's `locked_by` names it), else the first one up. */
  const pickWorker = (target: string | null) => {
    const up = upWorkers();
    return up.find((p) => p.name === target) ?? up[0];
  };

  const press = async (name: LauncherSwitchName, target: string | null): Promise<string> => {
    switch (name) {
      case 'kill_worker': {
        const worker = pickWorker(target);
        if (!worker) throw new SwitchRefused('no worker is up to kill');
        supervisor.killForRestart(worker.name);
        return `${worker.name} (pid ${worker.pid}) killed with SIGKILL; the launcher restarts it`;
      }
      case 'pause_worker': {
        const [stopped] = paused.entries();
        if (stopped) {
          throw new SwitchRefused(
            `${stopped[0]} is paused already; one worker at a time`,
            Math.ceil((stopped[1].until - Date.now()) / 1000),
          );
        }
        const worker = pickWorker(target);
        if (!worker) throw new SwitchRefused('no running worker to pause');
        supervisor.signal(worker.name, 'SIGSTOP');
        const timer = setTimeout(() => resume(worker.name), options.pauseMs);
        paused.set(worker.name, { until: Date.now() + options.pauseMs, timer });
        return (
          `${worker.name} (pid ${worker.pid}) paused with SIGSTOP; resumed with SIGCONT in ` +
          `${Math.round(options.pauseMs / 1000)} s, after its lease ran out`
        );
      }
      case 'kill_web': {
        // `web`, or behind the proxy the asked one of web-1..N if it is up, else the first up.
        const webs = supervisor
          .status()
          .filter((p) => /^web(-\d+)?$/.test(p.name) && p.state === 'up');
        const web = webs.find((p) => p.name === target) ?? webs[0];
        if (!web) throw new SwitchRefused('the web server is not up');
        // Answer first: this very request may come from that web process.
        setTimeout(() => {
          try {
            supervisor.killForRestart(web.name);
          } catch {
            // Already gone.
          }
        }, options.killWebDelayMs ?? 300).unref();
        return `${web.name} (pid ${web.pid}) is killed with SIGKILL now; the launcher restarts it`;
      }
      case 'pg_crash_restart': {
        const pg = supervisor.status().find((p) => p.name === 'postgres' && p.state === 'up');
        if (!pg) throw new SwitchRefused('no embedded PostgreSQL is up (your own DATABASE_URL?)');
        // The wrapper and the postmaster; the restart kills any backend left (a power cut).
        supervisor.killForRestart('postgres');
        return `PostgreSQL (pid ${pg.pid}) killed with SIGKILL; the launcher restarts it on the same data`;
      }
      case 'db_failover': {
        if (!options.cluster) {
          throw new SwitchRefused('no replicated cluster (start the demo with --ha)');
        }
        try {
          return await options.cluster.failover();
        } catch (error) {
          if (error instanceof ClusterNotReady) throw new SwitchRefused(error.message);
          throw error;
        }
      }
    }
  };
  return { paused, resume, press };
}

/** A switch that cannot act now: nothing to act on (409), or not yet (429). */
class SwitchRefused extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const retryAfter = (body as { retryAfterSeconds?: number }).retryAfterSeconds;
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    ...(retryAfter === undefined ? {} : { 'retry-after': String(Math.max(1, retryAfter)) }),
  });
  res.end(JSON.stringify(body));
}
