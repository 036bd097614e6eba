import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A Node process the bench started (a server under test, a worker, the processor). */
export interface ChildHandle {
  readonly pid: number;
  /** Last lines of output, for error messages. */
  readonly output: string[];
  stop(): Promise<void>;
}

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Children still running, so an interrupted run can stop them all. */
const running = new Set<ChildProcess>();

/** Stops every child started by `startNodeProcess` that is still running. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map(stopGroup));
}

/**
 * Starts `node --import tsx <script>` in its own process group (so `npx`/`sh` wrappers
 * never outlive it) and resolves when it is `ready`.
 */
export async function startNodeProcess(options: {
  name: string;
  /** Path relative to the repository root. */
  script: string;
  env: Record<string, string>;
  /** Node flags before `--import tsx` (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeArgs?: readonly string[];
  /** A stdout line that means ready, or a URL that answers 200 when ready. */
  ready: RegExp | string;
  timeoutMs?: number;
  /** Called with every output line (after the ready line too). */
  onLine?: (line: string) => void;
}): Promise<ChildHandle> {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '--import', 'tsx', options.script],
    {
      cwd: repoRoot,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  running.add(child);
  child.once('exit', () => running.delete(child));
  const output: string[] = [];
  const remember = (line: string) => {
    output.push(line);
    if (output.length > 40) output.shift();
    options.onLine?.(line);
  };
  const timeoutMs = options.timeoutMs ?? 60_000;
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${options.name} not ready after ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    const readyLine = options.ready instanceof RegExp ? options.ready : undefined;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      remember(line);
      if (readyLine?.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
    if (typeof options.ready === 'string') {
      const url = options.ready;
      const poll = async () => {
        const ok = await fetch(url).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) {
          clearTimeout(timer);
          resolve();
        } else if (child.exitCode === null) setTimeout(poll, 200);
      };
      void poll();
    }
    createInterface({ input: child.stderr! }).on('line', remember);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(`${options.name} exited (${code ?? signal}) before ready:\n${output.join('\n')}`),
      );
    });
  });
  try {
    await ready;
  } catch (error) {
    await stopGroup(child);
    throw error;
  }
  return { pid: child.pid!, output, stop: () => stopGroup(child) };
}

/** SIGTERM the process group, then SIGKILL after 5 s. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  signalGroup(child, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}
