/**
 * Builds the published package: `dist/` with ESM, type declarations and source maps for
 * every entry point. The monorepo never needs this (its tools resolve the `@once/source`
 * export condition to `src/`); `npm pack` and the package tests do.
 *
 * tsc rewrites the `.ts` extensions of relative imports in the emitted JavaScript
 * (`rewriteRelativeImportExtensions`) but not in the declarations, so this script rewrites
 * them there: a consumer's TypeScript resolves `./engine.js` to `./engine.d.ts`.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const file = path.join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8');
  const rewritten = text.replace(RELATIVE_TS_SPECIFIER, '$1$2.js$3');
  if (rewritten !== text) writeFileSync(file, rewritten);
}
