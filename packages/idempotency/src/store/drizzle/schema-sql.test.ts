import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { idempotencySchemaSql } from './schema-sql.ts';

const repoRoot = join(import.meta.dirname, '../../../../..');
const packageDir = join(repoRoot, 'packages/idempotency');

describe('idempotencySchemaSql', () => {
  it('is exactly what drizzle-kit generates from the pgTables (no drift)', async () => {
    const work = await mkdtemp(join(packageDir, '.drizzle-kit-check-'));
    try {
      const out = relative(repoRoot, join(work, 'out'));
      const config = join(work, 'drizzle.config.ts');
      await writeFile(
        config,
        `export default { dialect: 'postgresql', schema: './packages/idempotency/src/store/drizzle/schema.ts', out: './${out}', strict: true };\n`,
      );
      await promisify(execFile)(
        join(repoRoot, 'node_modules/.bin/drizzle-kit'),
        ['generate', '--config', relative(repoRoot, config), '--name', 'idempotency'],
        {
          cwd: repoRoot,
        },
      );
      const files = (await readdir(join(work, 'out'))).filter((f) => f.endsWith('.sql'));
      expect(files).toHaveLength(1);
      const generated = await readFile(join(work, 'out', files[0] as string), 'utf8');
      expect(idempotencySchemaSql.trim()).toBe(generated.trim());
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }, 60_000);
});
