import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '@once/postgres';

const processorDir = fileURLToPath(new URL('../..', import.meta.url));

/** The harness's secrets (production code has no defaults for them). */
export const TEST_PROCESSOR_SECRETS = {
  PROCESSOR_WEBHOOK_SECRET: 'whsec_once_demo',
  PROCESSOR_ADMIN_TOKEN: 'once-admin',
} as const;

export interface SpawnedProcessor {
  url: string;
  /** Every stdout/stderr line so far. */
  output: string[];
  /** Resolves with the first line matching `pattern` (rejects after `timeoutMs`). */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM, then SIGKILL if still alive after 6 s; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL the whole process group: a crash, nothing gets to clean up. */
  kill(): Promise<void>;
}

/**
 * Starts the processor (`node --import tsx src/main.ts`) as a real OS process in its own
 * process group and waits for GET /healthz. Callers talk to it only over HTTP, as to a third
 * party. Not the `tsx` CLI: it runs the server in a second node process and, on SIGTERM,
 * SIGKILLs it and exits 143 when the server's IPC acknowledgement takes over 30 ms, which it
 * does on a loaded machine (a graceful stop then looked like a failed one).
 * `ONCE_TEST_VERBOSE=1` echoes its lines.
 */
export async function spawnProcessor(env: Record<string, string>): Promise<SpawnedProcessor> {
  const port = await findFreePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: processorDir,
    env: {
      ...process.env,
      PORT: String(port),
      FORCE_COLOR: '0',
      ...TEST_PROCESSOR_SECRETS,
      ...env,
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
      output.push(line);
      if (process.env.ONCE_TEST_VERBOSE)
        console.log(`${new Date().toISOString()} [processor] ${line}`);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // Already gone.
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`processor exited early:\n${output.join('\n')}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      signal('SIGKILL');
      throw new Error(`processor did not start:\n${output.join('\n')}`);
    }
    await sleep(100);
  }
  return {
    url,
    output,
    async waitForLine(pattern, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const seen = output.find((line) => pattern.test(line));
        if (seen) return seen;
        if (Date.now() > until)
          throw new Error(
            `processor: no line matching ${pattern} within ${timeoutMs} ms:\n${output.slice(-20).join('\n')}`,
          );
        await sleep(50);
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      signal('SIGTERM');
      const code = await Promise.race([exited, sleep(6_000).then(() => 'timeout' as const)]);
      if (code !== 'timeout') return code;
      signal('SIGKILL');
      return exited;
    },
    async kill() {
      signal('SIGKILL');
      await exited;
    },
  };
}
