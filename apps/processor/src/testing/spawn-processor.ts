import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const processorDir = fileURLToPath(new URL('../..', import.meta.url));

/** A free port below the kernel's ephemeral range (see TOOLCHAIN.md). */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export interface SpawnedProcessor {
  url: string;
  output: string[];
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL the whole process group: a crash, nothing gets to clean up. */
  kill(): Promise<void>;
}

/**
 * Starts `node --import tsx src/main.ts` as a real OS process (own process group) and waits
 * for GET /healthz. Not the `tsx` CLI: it runs the server in a second node process and, on
 * SIGTERM, SIGKILLs it and exits 143 when the server's IPC acknowledgement takes over 30 ms,
 * which it does on a loaded machine (a graceful stop then looked like a failed one).
 */
export async function spawnProcessor(env: Record<string, string>): Promise<SpawnedProcessor> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: processorDir,
    env: { ...process.env, PORT: String(port), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) =>
    output.push(...chunk.toString().split('\n').filter(Boolean)),
  );
  child.stderr?.on('data', (chunk: Buffer) =>
    output.push(...chunk.toString().split('\n').filter(Boolean)),
  );
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`processor exited early:\n${output.join('\n')}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`processor did not start:\n${output.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output,
    async stop() {
      process.kill(-child.pid!, 'SIGTERM');
      return exited;
    },
    async kill() {
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
    },
  };
}
