import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';

const processorDir = fileURLToPath(new URL('../..', import.meta.url));

/** The harness's secrets (production code has no defaults for them). */
export const TEST_PROCESSOR_SECRETS = {
  PROCESSOR_WEBHOOK_SECRET: 'whsec_once_demo',
  PROCESSOR_ADMIN_TOKEN: 'once-admin',
} as const;

/**
 * Starts `node --import tsx <script>` as a real OS process in its own process group (the
 * processor's and the worker's tests). Not the `tsx` CLI: it runs the script in a second node
 * process and, on SIGTERM, SIGKILLs it and exits 143 when its IPC acknowledgement takes over
 * 30 ms, as it does on a loaded machine. `ONCE_TEST_VERBOSE=1` echoes its lines.
 */
export function spawnTestProcess(
  script: string,
  options: { cwd: string; env: Record<string, string>; name: string },
) {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: options.cwd,
    env: { ...process.env, FORCE_COLOR: '0', ...options.env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  /** Every stdout/stderr line so far. */
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
      lines.push(line);
      if (process.env.ONCE_TEST_VERBOSE)
        console.log(`${new Date().toISOString()} [${options.name}] ${line}`);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
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
    /** Resolves with the first line matching `pattern` (rejects after `timeoutMs`). */
    async waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const seen = lines.find((line) => pattern.test(line));
        if (seen) return seen;
        if (Date.now() > until)
          throw new Error(
            `${options.name}: no line matching ${pattern} within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`,
          );
        await sleep(50);
      }
    },
    /** SIGTERM, then SIGKILL if still alive after 6 s; resolves with the exit code. */
    async stop(): Promise<number | null> {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      signal('SIGTERM');
      const code = await Promise.race([exited, sleep(6_000).then(() => 'timeout' as const)]);
      if (code !== 'timeout') return code;
      signal('SIGKILL');
      return exited;
    },
    /** SIGKILL the whole process group: a crash, nothing gets to clean up. */
    async kill(): Promise<void> {
      signal('SIGKILL');
      await exited;
    },
  };
}

export type SpawnedProcessor = Awaited<ReturnType<typeof spawnProcessor>>;

/**
 * Starts the processor as a real OS process and waits for GET /healthz. Callers talk to it
 * only over HTTP, as to a third party.
 */
export async function spawnProcessor(env: Record<string, string>) {
  const port = await findFreePort();
  const processor = spawnTestProcess('src/main.ts', {
    cwd: processorDir,
    env: { PORT: String(port), ...TEST_PROCESSOR_SECRETS, ...env },
    name: 'processor',
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (processor.child.exitCode !== null) {
      throw new Error(`processor exited early:\n${processor.lines.join('\n')}`);
    }
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      processor.signal('SIGKILL');
      throw new Error(`processor did not start:\n${processor.lines.join('\n')}`);
    }
    await sleep(100);
  }
  return { ...processor, url, output: processor.lines };
}
