import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A temporary copy of the committed tree with a planted bug's patch applied. `node_modules` is
 * hard-linked and its workspace links are relative, so `@once/*` resolves to the copy's
 * patched packages; the web build is reused when `reuseWebBuild`.
 */
export function plantedCopy(
  repoRoot: string,
  patchFile: string,
  { reuseWebBuild }: { reuseWebBuild: boolean },
): string {
  const name = path.basename(patchFile, '.patch');
  const copy = mkdtempSync(path.join(os.tmpdir(), `once-planted-${name}-`));
  // mkdtemp makes it 0700; PostgreSQL runs as its own OS user and must reach its binaries.
  chmodSync(copy, 0o755);
  execFileSync('sh', ['-c', `git -C "${repoRoot}" archive HEAD | tar -x -C "${copy}"`]);
  // npm nests a workspace's own versions (the web's graphql-yoga, say) in its node_modules.
  const workspaces = [
    ...['apps', 'packages'].flatMap((dir) =>
      readdirSync(path.join(repoRoot, dir)).map((entry) => path.join(dir, entry)),
    ),
    'e2e',
    'bench',
  ];
  for (const dir of ['.', ...workspaces]) {
    const modules = path.join(repoRoot, dir, 'node_modules');
    if (existsSync(modules) && existsSync(path.join(copy, dir)))
      execFileSync('cp', ['-al', modules, path.join(copy, dir, 'node_modules')]);
  }
  const build = path.join(repoRoot, 'apps/web/.next-e2e');
  if (reuseWebBuild && existsSync(build)) {
    execFileSync('cp', ['-al', build, path.join(copy, 'apps/web/.next-e2e')]);
  }
  execFileSync('git', ['apply', patchFile], { cwd: copy, stdio: 'pipe' });
  return copy;
}

/** Removes a planted copy (retrying: an interrupted run's processes may still be writing). */
export function removePlantedCopy(copy: string): void {
  rmSync(copy, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
}
