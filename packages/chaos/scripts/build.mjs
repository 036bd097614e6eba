/**
 * Builds the published package: `dist/` with ESM, type declarations and source maps. The
 * monorepo never needs it (its tools resolve the `@once/source` condition to `src/`).
 * tsc rewrites `.ts` extensions of relative imports in the JavaScript but not in the
 * declarations, so this rewrites them there; the CLI is made executable.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(packageDir, 'dist');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', path.join(packageDir, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
const RELATIVE_TS_SPECIFIER = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g;
for (const entry of readdirSync(dist, { withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const file = path.join(dist, entry.name);
  writeFileSync(file, readFileSync(file, 'utf8').replace(RELATIVE_TS_SPECIFIER, '$1$2.js$3'));
}
chmodSync(path.join(dist, 'cli.js'), 0o755);
