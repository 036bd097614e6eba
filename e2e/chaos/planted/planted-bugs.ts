import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding one `<name>.patch` per planted bug. */
export const PLANTED_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The repository the patches apply to (`e2e/chaos/planted` is three levels down). */
const REPO_ROOT = path.resolve(PLANTED_DIR, '../../..');

/** A planted bug: a tiny patch that reopens one known path to a double charge or lost payment. */
export interface PlantedBug {
  name: string;
  patchFile: string;
  /** The patch changes code the web bundle contains: the copy needs its own `next build`. */
  needsWebBuild: boolean;
}

/** Every planted bug, by file name. */
export function plantedBugs(): PlantedBug[] {
  return readdirSync(PLANTED_DIR)
    .filter((f) => f.endsWith('.patch'))
    .sort()
    .map((f) => {
      const patchFile = path.join(PLANTED_DIR, f);
      // From the repository's root: run in a subdirectory (`npm run -w e2e`), `git apply`
      // ignores every path outside it, the list came out empty and patched web code ran
      // with the unpatched web build.
      const touched = execFileSync('git', ['apply', '--numstat', patchFile], {
        encoding: 'utf8',
        cwd: REPO_ROOT,
      });
      return {
        name: f.replace(/\.patch$/, ''),
        patchFile,
        needsWebBuild: /(apps\/web|packages\/(api|idempotency|db))\//.test(touched),
      };
    });
}

/** Whether the patch still applies to `repoRoot` (a patch that no longer applies is a failure). */
export function patchApplies(bug: PlantedBug, repoRoot: string): { ok: boolean; error: string } {
  try {
    execFileSync('git', ['apply', '--check', bug.patchFile], { cwd: repoRoot, stdio: 'pipe' });
    return { ok: true, error: '' };
  } catch (error) {
    return { ok: false, error: String((error as { stderr?: Buffer }).stderr ?? error) };
  }
}

/**
 * A temporary copy of the committed tree with the bug applied; production code is never
 * switched. `node_modules` is hard-linked (no disk, no install) and the workspace links
 * inside it are relative, so `@once/*` resolves to the copy's patched packages. The web
 * build is reused unless the patch touches code the web bundle contains.
 *
 * @example
 * const copy = preparePlantedCopy(bug, repoRoot); try { ... } finally { rmSync(copy, { recursive: true, force: true }); }
 */
export function preparePlantedCopy(bug: PlantedBug, repoRoot: string): string {
  const copy = mkdtempSync(path.join(os.tmpdir(), `once-planted-${bug.name}-`));
  // mkdtemp makes it 0700; PostgreSQL runs as its own OS user and must reach its binaries.
  chmodSync(copy, 0o755);
  execFileSync('sh', ['-c', `git -C "${repoRoot}" archive HEAD | tar -x -C "${copy}"`]);
  execFileSync('cp', ['-al', path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules')]);
  const build = path.join(repoRoot, 'apps/web/.next-e2e');
  if (!bug.needsWebBuild && existsSync(build)) {
    execFileSync('cp', ['-al', build, path.join(copy, 'apps/web/.next-e2e')]);
  }
  execFileSync('git', ['apply', bug.patchFile], { cwd: copy, stdio: 'pipe' });
  return copy;
}

/**
 * Runs the chaos CLI inside a planted copy for one seed; resolves with its exit code
 * (1: a violation was reported) and the output's last lines. Aborting `signal` sends the
 * run SIGTERM, on which it stops its system and exits.
 */
export function runChaosIn(
  copy: string,
  args: string[],
  signal?: AbortSignal,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'e2e/chaos/main.ts', ...args], {
      cwd: copy,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
      killSignal: 'SIGTERM',
    });
    // The abort's own error event: the exit that follows resolves the run.
    child.on('error', () => {});
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

/** Removes a planted copy (retrying: an interrupted run's processes may still be writing). */
export function removePlantedCopy(copy: string): void {
  rmSync(copy, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
}
