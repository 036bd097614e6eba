import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { createInterface } from 'node:readline';
import { ProcessGroupTether, signalGroup } from './process-group-tether.ts';
import { RestartHistory, type RestartPolicy } from './restart-policy.ts';

/** One part of the system, as the supervisor starts it. */
export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** URL answering 2xx once the process is ready. */
  healthUrl?: string;
  /** Ready when a stdout line matches (instead of, or before, healthUrl). */
  readyLine?: RegExp;
  /** A line saying the process cannot start; its first capture group is the error message. */
  failLine?: RegExp;
  /** Milliseconds to wait for readiness. */
  readyTimeoutMs?: number;
  /** A task that is expected to exit (a build): its exit is not a failure of the system. */
  oneShot?: boolean;
}

export interface ManagedProcess {
  readonly spec: ProcessSpec;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** First stdout line matching `spec.readyLine`, if any. */
  readyMatch?: RegExpMatchArray;
}

/** A part could not start; the message is one line saying what to do. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export interface SupervisorOptions {
  /** Restart parts that die; unset: an exit is only reported (tests that kill on purpose). */
  restart?: RestartPolicy;
}

/** Called when a part exits and will not come back; `reason` is one line for a person. */
export type UnexpectedExitHandler = (name: string, code: number | null, reason: string) => void;

/** What a part is doing right now: `up`, `restarting` after a crash, or `down` for good. */
export interface PartStatus {
  name: string;
  state: 'up' | 'restarting' | 'down';
  pid?: number;
  /** Restarts since the launcher started. */
  restarts: number;
}

const COLOURS = [36, 35, 33, 32, 34, 31, 96, 95];

/**
 * Runs each part of the system as its own OS process group (so an `npx`/`sh` wrapper never
 * leaves the real server running), prefixes its output, and stops them in reverse start
 * order. With a {@link RestartPolicy}, a part that dies is started again with backoff, in
 * its place in the stop order, until a crash loop.
 */
export class Supervisor {
  private readonly processes: ManagedProcess[] = [];
  private readonly histories = new Map<string, RestartHistory>();
  private readonly pendingRestarts = new Set<NodeJS.Timeout>();
  private stopping = false;
  private colourIndex = 0;
  /**
   * Each long-running part's state by name, in the order it first started: a part between its
   * crash and its restart keeps its place, so a watcher's list does not reorder.
   */
  private readonly parts = new Map<string, Omit<PartStatus, 'name' | 'pid'>>();
  /** Processes killed on request (`killForRestart`): their exit is no crash. */
  private readonly requestedKills = new WeakSet<ManagedProcess>();
  /** Stops our process groups if this process dies without stopping them. */
  private readonly tether = new ProcessGroupTether();

  constructor(
    private readonly log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
    private readonly onUnexpectedExit?: UnexpectedExitHandler,
    private readonly options: SupervisorOptions = {},
  ) {}

  get names(): string[] {
    return this.processes.map((p) => p.spec.name);
  }

  /** Every long-running part and its state, in start order (one-shot tasks left out). */
  status(): PartStatus[] {
    return [...this.parts].flatMap(([name, part]) => {
      const running = this.processes.find((p) => p.spec.name === name);
      // Up without a process: stopped on purpose, or its first start failed.
      if (!running && part.state === 'up') return [];
      return [{ name, ...part, ...(running ? { pid: running.child.pid } : {}) }];
    });
  }

  /** Starts a process and resolves once it is ready (or rejects if it dies first). */
  start(spec: ProcessSpec): Promise<ManagedProcess> {
    return this.launch(spec, { restarted: false });
  }

  private async launch(
    spec: ProcessSpec,
    at: { restarted: boolean; index?: number },
  ): Promise<ManagedProcess> {
    const colour = COLOURS[this.colourIndex++ % COLOURS.length];
    const useColour = process.stdout.isTTY && !process.env.NO_COLOR;
    const prefix = useColour
      ? `\x1b[${colour}m${spec.name.padEnd(10)}|\x1b[0m`
      : `${spec.name.padEnd(10)}|`;
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env, FORCE_COLOR: '0' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const startedAt = Date.now();
    let ready = false;
    let failure: string | undefined;
    let markReady: ((m: RegExpMatchArray) => void) | undefined;
    const lineReady = new Promise<RegExpMatchArray>((resolve) => {
      markReady = resolve;
    });
    const managed: ManagedProcess = {
      spec,
      child,
      exited: new Promise((resolve) =>
        child.on('exit', (code, signal) => {
          exitSignal = signal;
          resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : null));
        }),
      ),
    };
    let exitSignal: NodeJS.Signals | null = null;
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.log(`${prefix} ${line}`);
        const failed = spec.failLine ? line.match(spec.failLine) : null;
        if (failed) failure = failed[1] ?? line;
        const match = spec.readyLine ? line.match(spec.readyLine) : null;
        if (match && !managed.readyMatch) {
          managed.readyMatch = match;
          markReady?.(match);
        }
      });
    }
    if (at.index !== undefined) this.processes.splice(at.index, 0, managed);
    else this.processes.push(managed);
    if (!spec.oneShot && !this.parts.has(spec.name)) {
      this.parts.set(spec.name, { state: 'up', restarts: 0 });
    }
    if (child.pid !== undefined) this.tether.addGroup(child.pid);
    void managed.exited.then((code) => {
      if (spec.oneShot) {
        this.forget(managed);
        return;
      }
      if (this.stopping || !this.processes.includes(managed)) return; // stopped on purpose
      const how = exitSignal ? `signal ${exitSignal}` : `code ${code}`;
      // A first start that fails is a start-up failure (start() rejects), not a crash.
      if (!ready && !at.restarted) return;
      this.afterCrash(managed, prefix, how, code, Date.now() - startedAt);
    });

    const timeoutMs = spec.readyTimeoutMs ?? 120_000;
    const died = managed.exited.then(async (code) => {
      // The failure line may still be in the pipe when 'exit' fires.
      await new Promise((r) => setTimeout(r, 50));
      if (failure) throw new StartupError(failure);
      throw new Error(`${spec.name} exited with code ${code} before it was ready`);
    });
    const readiness = (async () => {
      if (spec.readyLine) await lineReady;
      if (spec.healthUrl) await waitForHealthy(spec.healthUrl, timeoutMs);
    })();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${spec.name} was not ready within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([readiness, died, timeout]);
      ready = true;
    } catch (error) {
      // A first start that failed leaves no entry (a restart's failure is afterCrash's to
      // count): a later kill or start by name must find the live part, not this dead one.
      if (!at.restarted) {
        this.forget(managed);
        signalGroup(managed.child.pid, 'SIGKILL');
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return managed;
  }

  /** A part died on its own: restart it with backoff, or give up on a crash loop. */
  private afterCrash(
    managed: ManagedProcess,
    prefix: string,
    how: string,
    code: number | null,
    upForMs: number,
  ): void {
    const { spec } = managed;
    const index = this.processes.indexOf(managed);
    this.forget(managed);
    // Whatever it spawned in its group (Next.js's workers, the postmaster under its wrapper)
    // would hold the port or the data directory the restarted part needs.
    signalGroup(managed.child.pid, 'SIGKILL');
    const giveUp = (reason: string, line = reason) => {
      this.setState(spec.name, 'down');
      this.log(`${prefix} ${line}`);
      this.onUnexpectedExit?.(spec.name, code, reason);
    };
    const policy = this.options.restart;
    if (!policy) {
      giveUp(`${spec.name} exited with ${how}`, `exited with ${how}`);
      return;
    }
    const window = `${Math.round(policy.windowMs / 1000)} s`;
    if (this.requestedKills.has(managed)) {
      // Asked for (a chaos switch), not a crash: back after the first backoff step, and
      // neither the crash-loop budget nor the backoff remembers it.
      this.scheduleRestart(spec, prefix, index, policy.initialDelayMs);
      this.log(
        `${prefix} killed on request (${how}); restarting in ` +
          `${(policy.initialDelayMs / 1000).toFixed(1)} s (not counted as a crash)`,
      );
      return;
    }
    const history = this.histories.get(spec.name) ?? new RestartHistory(policy);
    this.histories.set(spec.name, history);
    const decision = history.decide(Date.now(), upForMs);
    if (!decision.restart) {
      giveUp(
        `${spec.name} exited ${decision.restartsInWindow} times within ${window} (last: ${how}): ` +
          'a crash loop, so it is not restarted again; its last lines are above, fix the cause and start again',
      );
      return;
    }
    this.scheduleRestart(spec, prefix, index, decision.delayMs);
    this.log(
      `${prefix} exited with ${how}; restarting in ${(decision.delayMs / 1000).toFixed(1)} s ` +
        `(restart ${decision.restartsInWindow} of at most ${policy.maxRestarts} within ${window})`,
    );
  }

  /** Starts `spec` again after `delayMs`, at its old place in the stop order. */
  private scheduleRestart(spec: ProcessSpec, prefix: string, index: number, delayMs: number) {
    this.setState(spec.name, 'restarting');
    this.parts.get(spec.name)!.restarts++;
    const timer = setTimeout(() => {
      this.pendingRestarts.delete(timer);
      if (this.stopping) return;
      this.launch(spec, { restarted: true, index: Math.min(index, this.processes.length) }).then(
        (next) => {
          this.setState(spec.name, 'up');
          this.log(`${prefix} restarted (pid ${next.child.pid})`);
        },
        // Died again before it was ready: its exit handler has already decided what next.
        () => {},
      );
    }, delayMs);
    this.pendingRestarts.add(timer);
  }

  /** Sends a signal to a process group (the process and everything it spawned). */
  signal(name: string, signal: NodeJS.Signals): void {
    signalGroup(this.find(name).child.pid, signal);
  }

  /** SIGKILLs a part's group on request (a chaos switch): it comes back, but is no crash. */
  killForRestart(name: string): void {
    const managed = this.find(name);
    this.requestedKills.add(managed);
    signalGroup(managed.child.pid, 'SIGKILL');
  }

  /** Stops one process (SIGTERM, then SIGKILL after `graceMs`) and forgets it. */
  async stop(name: string, graceMs = 8_000): Promise<void> {
    const managed = this.find(name);
    this.forget(managed);
    await terminate(managed, graceMs);
  }

  /** Kills one process group with SIGKILL, like a crash, and forgets it. */
  async kill(name: string): Promise<void> {
    const managed = this.find(name);
    this.forget(managed);
    signalGroup(managed.child.pid, 'SIGKILL');
    await managed.exited;
  }

  /** Stops everything, last started first (web before worker before Postgres). */
  async stopAll(graceMs = 8_000): Promise<void> {
    this.stopping = true;
    for (const timer of this.pendingRestarts) clearTimeout(timer);
    this.pendingRestarts.clear();
    while (this.processes.length > 0) {
      const managed = this.processes.pop()!;
      await terminate(managed, graceMs);
    }
    this.tether.release();
  }

  private setState(name: string, state: PartStatus['state']): void {
    const part = this.parts.get(name);
    if (part) part.state = state;
  }

  private forget(managed: ManagedProcess): void {
    const index = this.processes.indexOf(managed);
    if (index >= 0) this.processes.splice(index, 1);
  }

  private find(name: string): ManagedProcess {
    const managed = this.processes.find((p) => p.spec.name === name);
    if (!managed) throw new Error(`no running process named ${name}`);
    return managed;
  }
}

async function terminate(managed: ManagedProcess, graceMs: number): Promise<void> {
  const pid = managed.child.pid;
  if (pid === undefined || managed.child.exitCode !== null) return;
  signalGroup(pid, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
  await managed.exited;
  clearTimeout(timer);
  // Anything the process spawned and left behind in its group goes too.
  signalGroup(pid, 'SIGKILL');
}

async function waitForHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
      lastError = `HTTP ${response.status}`;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not become healthy within ${timeoutMs} ms (${lastError})`);
}
