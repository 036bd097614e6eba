// A published package as its consumers get it: packed by `npm pack`, then run from a project
// outside the workspace (@once/idempotency's and @once/chaos's tarball tests).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** What `npm pack` made, and where; `dispose` removes the build and the temp dir. */
export interface PackedPackage {
  tarball: string;
  tempDir: string;
  dispose(): Promise<void>;
}

/**
 * Packs the package in `packageDir` into a fresh temp dir exactly as `npm publish` would:
 * `npm pack` runs the `prepack` script, which builds `dist/`, so nothing here builds on the
 * side. `dist/` is removed again by `dispose`: inside the monorepo every tool reads `src/`
 * through the `@once/source` condition, and a stale `dist/` must never be what a
 * misconfigured tool silently runs.
 */
export async function packPackage(packageDir: string): Promise<PackedPackage> {
  const tempDir = await mkdtemp(path.join(os.tmpdir(), `${path.basename(packageDir)}-pack-`));
  const dist = path.join(packageDir, 'dist');
  let stdout: string;
  try {
    await rm(dist, { recursive: true, force: true });
    ({ stdout } = await run('npm', ['pack', '--json', '--pack-destination', tempDir], {
      cwd: packageDir,
    }));
  } catch (error) {
    await rm(dist, { recursive: true, force: true });
    await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  return {
    tarball: path.join(tempDir, packed!.filename),
    tempDir,
    async dispose() {
      await rm(dist, { recursive: true, force: true });
      await rm(tempDir, { recursive: true, force: true });
    },
  };
}

/**
 * A consumer's server started with `node` in `cwd`, and the port it printed (`listening
 * <port>`). `env` is all it gets: without the monorepo's `@once/source` condition in
 * `NODE_OPTIONS`, or it would load a tarball's TypeScript sources instead of its build.
 */
export interface ConsumerServer {
  baseUrl: string;
  output: () => string;
  stop(): Promise<void>;
}

export function startConsumerServer(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<ConsumerServer> {
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) {
        resolve({
          baseUrl: `http://127.0.0.1:${match[1]}`,
          output: () => output,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}:\n${output}`)));
  });
}
