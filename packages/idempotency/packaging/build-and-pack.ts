// Where this package and the monorepo's checkers are; packing itself is `@once/scripts/pack`.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** packages/idempotency */
export const packageDir = fileURLToPath(new URL('..', import.meta.url));
/** The monorepo root (its node_modules/.bin holds the checkers). */
export const repoRoot = path.resolve(packageDir, '../..');
export const bin = (name: string) => path.join(repoRoot, 'node_modules/.bin', name);
