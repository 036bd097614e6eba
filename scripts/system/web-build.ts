import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const webDir = path.join(repoRoot, 'apps/web');

/** What a production build of the web app is made from: its sources and every workspace package's. */
const BUILD_INPUTS = ['apps/web', 'packages', 'package-lock.json', 'tsconfig.base.json'];
const SKIPPED = new Set(['node_modules', 'dist', 'test-results', 'coverage', '.turbo']);
/** Files a build or a type-check writes into the inputs themselves: not inputs. */
const WRITTEN_BY_TOOLS = /(^|\/)next-env\.d\.ts$|\.tsbuildinfo$/;
const FINGERPRINT_FILE = 'once-build-fingerprint';

/** The build every test suite serves, apart from the running demo's `.next`. */
export const TEST_NEXT_DIST_DIR = '.next-e2e';
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function addInputs(hash: ReturnType<typeof createHash>, relative: string): void {
  const absolute = path.join(repoRoot, relative);
  if (!existsSync(absolute)) return;
  const entries = readdirSync(absolute, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => {
      const parts = path.relative(repoRoot, file).split(path.sep);
      if (parts.some((part) => SKIPPED.has(part) || part.startsWith('.next'))) return false;
      // Tests and prose are not compiled into the build.
      return !/\.(test|spec)\.tsx?$|\.md$/.test(file) && !WRITTEN_BY_TOOLS.test(file);
    })
    .sort();
  for (const file of entries) {
    hash.update(path.relative(repoRoot, file));
    hash.update('\0');
    hash.update(readFileSync(file));
    hash.update('\0');
  }
}

/** A digest of every file a build of `distDir` depends on, and of the folder's name. */
function webBuildFingerprint(distDir: string): string {
  const hash = createHash('sha256');
  hash.update(`distDir=${distDir}\0`);
  for (const input of BUILD_INPUTS) {
    if (input.endsWith('.json')) {
      const file = path.join(repoRoot, input);
      if (existsSync(file)) hash.update(readFileSync(file));
    } else {
      addInputs(hash, input);
    }
  }
  return hash.digest('hex');
}

/** A lock left by a runner that was killed mid-build is taken over, not waited out. */
function holderIsGone(lock: string): boolean {
  try {
    process.kill(Number(readFileSync(path.join(lock, 'pid'), 'utf8')), 0);
    return false;
  } catch (error) {
    // No pid file yet: the holder is between mkdir and write; ESRCH: it is gone.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function isFresh(distDir: string, fingerprint: string): boolean {
  const dir = path.join(webDir, distDir);
  const stamp = path.join(dir, FINGERPRINT_FILE);
  return (
    existsSync(path.join(dir, 'BUILD_ID')) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8') === fingerprint
  );
}

/**
 * Makes sure `apps/web/<distDir>` holds a production build of the sources as they are now,
 * building it only when a source changed since. A lock directory keeps two test runners from
 * building the same folder at once; the second waits and then finds the build fresh.
 */
export function ensureWebBuild(distDir: string, log: (line: string) => void = console.log): void {
  const fingerprint = webBuildFingerprint(distDir);
  if (isFresh(distDir, fingerprint)) return;
  const lock = path.join(webDir, `${distDir}.building`);
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      if (holderIsGone(lock)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new Error(`${lock} is held for 15 min: remove it if no build is running`);
      }
      sleep(1_000);
    }
  }
  try {
    if (isFresh(distDir, fingerprint)) return;
    log(`building apps/web/${distDir} (next build): the sources changed since the last build`);
    const result = spawnSync(
      process.execPath,
      [path.join(repoRoot, 'node_modules/next/dist/bin/next'), 'build'],
      {
        cwd: webDir,
        env: {
          ...process.env,
          NODE_ENV: 'production',
          NEXT_TELEMETRY_DISABLED: '1',
          ONCE_NEXT_DIST_DIR: distDir,
        },
        stdio: 'inherit',
      },
    );
    if (result.status !== 0) throw new Error(`next build failed (exit ${result.status})`);
    writeFileSync(path.join(webDir, distDir, FINGERPRINT_FILE), fingerprint);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
