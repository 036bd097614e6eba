import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** packages/idempotency */
export const packageDir = fileURLToPath(new URL('..', import.meta.url));
/** The monorepo root (its node_modules/.bin holds the checkers). */
export const repoRoot = path.resolve(packageDir, '../..');
export const bin = (name: string) => path.join(repoRoot, 'node_modules/.bin', name);

/** What `npm pack` made, and where; `dispose` removes the build and the temp dir. */
export interface PackedPackage {
  tarball: string;
  tempDir: string;
  dispose(): Promise<void>;
}

/**
 * Packs the package into a fresh temp dir exactly as `npm publish` would: `npm pack` runs the
 * `prepack` script, which builds `dist/`, so nothing here builds on the side. `dist/` is removed again by `dispose`: inside the monorepo every
 * tool reads `src/` through the `@once/source` condition, and a stale `dist/` must never be
 * what a misconfigured tool silently runs.
 */
export async function buildAndPack(): Promise<PackedPackage> {
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'once-idempotency-pack-'));
  let stdout: string;
  try {
    await rm(path.join(packageDir, 'dist'), { recursive: true, force: true });
    ({ stdout } = await run('npm', ['pack', '--json', '--pack-destination', tempDir], {
      cwd: packageDir,
    }));
  } catch (error) {
    await rm(path.join(packageDir, 'dist'), { recursive: true, force: true });
    await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  return {
    tarball: path.join(tempDir, packed!.filename),
    tempDir,
    async dispose() {
      await rm(path.join(packageDir, 'dist'), { recursive: true, force: true });
      await rm(tempDir, { recursive: true, force: true });
    },
  };
}
