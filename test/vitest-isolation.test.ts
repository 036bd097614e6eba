import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../scripts/system/start-system.ts';
import { ISOLATED_FILES } from '../vitest.config.ts';

/**
 * Most test files share their worker's loaded modules (vitest.config.ts): a file that changes
 * what the whole process shares must run in a process of its own, or it leaks into the files
 * after it. These are the changes a line of the file, or of a module it imports, shows.
 */
const PROCESS_WIDE = [
  /\bvi\.(mock|doMock|stubEnv|stubGlobal|useFakeTimers)\(/,
  // A spy on a global class's prototype needs the pristine one: an earlier file in the worker
  // left Response.prototype.clone unredefinable ("Cannot redefine property: clone").
  /\bvi\.spyOn\((console|process|globalThis|[A-Z]\w*\.prototype)\b/,
  /\bprocess\.env(\.\w+|\[[^\]]+\])\s*=[^=]/,
  /\bdelete process\.env\b/,
  /\.setGlobal\w*\(/,
];

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    encoding: 'utf8',
  }).split('\n');
}

function testFiles(): string[] {
  return trackedFiles().filter((file) => file.endsWith('.test.ts') && !file.startsWith('e2e/'));
}

const RELATIVE_IMPORT = /\bfrom\s+['"](\.{1,2}\/[^'"]+\.ts)['"]/g;

/**
 * The file and the repo files it imports by relative path, transitively. Workspace imports
 * (`@once/...`) are not followed: no module under a package's `src/` changes process-wide
 * state (the second test holds that line).
 */
function withRelativeImports(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file) || !existsSync(path.join(repoRoot, file))) return seen;
  seen.add(file);
  const source = readFileSync(path.join(repoRoot, file), 'utf8');
  for (const [, specifier] of source.matchAll(RELATIVE_IMPORT))
    withRelativeImports(path.join(path.dirname(file), specifier!), seen);
  return seen;
}

const changesProcessWideState = (file: string) =>
  PROCESS_WIDE.some((pattern) => pattern.test(readFileSync(path.join(repoRoot, file), 'utf8')));

describe('test files that change process-wide state run isolated', () => {
  it('every such file, or file importing such a module, is in ISOLATED_FILES', () => {
    const changing = testFiles().filter((file) =>
      [...withRelativeImports(file)].some(changesProcessWideState),
    );
    expect(changing.length, 'the patterns still find something').toBeGreaterThan(0);
    expect(changing.filter((file) => !ISOLATED_FILES.includes(file))).toEqual([]);
  });

  it('no workspace module outside tests changes process-wide state (the walk above skips them)', () => {
    const modules = trackedFiles().filter(
      (file) => /^(packages|apps)\/[^/]+\/src\/.+\.ts$/.test(file) && !file.endsWith('.test.ts'),
    );
    expect(modules.filter(changesProcessWideState)).toEqual([]);
  });

  it('every file in ISOLATED_FILES exists', () => {
    expect(ISOLATED_FILES.filter((file) => !testFiles().includes(file))).toEqual([]);
  });
});
