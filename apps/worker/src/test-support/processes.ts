import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

export interface RunningProcess {
  child: ChildProcess;
  /** Every stdout/stderr line so far. */
  lines: string[];
  /** Resolves with the first line matching `pattern` (rejects after `timeoutMs`). */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL if still alive after 6 s; resolves with the exit code. */
  stop(): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * Starts `node --import tsx <script>` as a real OS process in its own process group. Not
 * the `tsx` CLI: it runs the script in a second node process and, on SIGTERM, waits only
 * 30 ms for that child to report over IPC that it received the signal too; on a loaded
 * machine the report comes later, so the CLI SIGKILLs the child and exits 143 itself
 * (seen as "exits 0 on SIGTERM" getting 143). One process: the signal reaches main.ts.
 */
export function startProcess(
  script: string,
  env: Record<string, string>,
  name: string,
): RunningProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, script)], {
    cwd: repoRoot,
    env: { ...process.env, ...env, FORCE_COLOR: '0' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (process.env.ONCE_TEST_VERBOSE)
        console.log(`${new Date().toISOString()} [${name}] ${line}`);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, sig);
    } catch {
      // Already gone.
    }
  };
  return {
    child,
    lines,
    exited,
    signal,
    waitForLine(pattern, timeoutMs = 30_000) {
      const seen = lines.find((line) => pattern.test(line));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${name}: no line matching ${pattern} within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      signal('SIGTERM');
      const code = await Promise.race([exited, sleep(6_000).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        signal('SIGKILL');
        return exited;
      }
      return code;
    },
  };
}

/** Short leases, backoffs and reconcile delays so chaos tests converge in seconds. */
const FAST_WORKER_ENV = {
  WORKER_HEALTH_PORT: '0',
  WORKER_LEASE_MS: '2000',
  WORKER_PROCESSOR_TIMEOUT_MS: '1500',
  WORKER_POLL_INTERVAL_MS: '500',
  WORKER_BACKOFF_BASE_MS: '100',
  WORKER_BACKOFF_MAX_MS: '800',
  WORKER_RECONCILE_INTERVAL_MS: '500',
  WORKER_RECONCILE_AFTER_MS: '500',
  // No web receives the processor's webhooks here, so a fast backfill would settle payments
  // behind the worker's back and race the protocol these tests tell step by step; the
  // backfill has its own tests (backfill-webhook-events.test.ts).
  WORKER_WEBHOOK_BACKFILL_INTERVAL_MS: '600000',
  WORKER_SWEEP_INTERVAL_MS: '1000',
  WORKER_REAP_INTERVAL_MS: '5000',
};

export async function startWorkerProcess(
  env: Record<string, string>,
  workerId: string,
): Promise<RunningProcess> {
  const worker = startProcess(
    'apps/worker/src/runtime/main.ts',
    { ...FAST_WORKER_ENV, WORKER_ID: workerId, ...env },
    workerId,
  );
  await worker.waitForLine(/worker\.started/, 60_000);
  return worker;
}
