/**
 * Builds a published package (`npm run build` or `prepack` in its folder: the package is the
 * working directory): `dist/` with ESM, type declarations and source maps from its
 * `tsconfig.build.json`. The monorepo never needs it (its tools resolve the `@once/source`
 * export condition to `src/`); `npm pack` and the package tests do.
 *
 * tsc rewrites the `.ts` extensions of relative imports in the emitted JavaScript
 * (`rewriteRelativeImportExtensions`) but not in the declarations, so this script rewrites
 * them there: a consumer's TypeScript resolves `./engine.js` to `./engine.d.ts`. Each file
 * the manifest's `bin` names is made executable.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const packageDir = process.cwd();
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
const { bin = {} } = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
for (const file of typeof bin === 'string' ? [bin] : Object.values(bin)) {
  chmodSync(path.join(packageDir, file), 0o755);
}
