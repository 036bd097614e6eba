import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createEmptyTestDatabase,
  ensureTemplateDatabase,
  testAdminUrl,
  withDatabase,
} from './test-database.ts';

const admin = postgres(testAdminUrl(), { max: 1, onnotice: () => {} });
const template = `tmpl_${randomBytes(6).toString('hex')}`;
afterAll(async () => {
  await admin.unsafe(`drop database if exists ${template} with (force)`);
  await admin.end();
});

describe('test databases copied from a template', () => {
  it('callers racing for a template build it once, and only copy it complete', async () => {
    let builds = 0;
    const build = async (url: string) => {
      builds++;
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      await sql`create table built (step int)`;
      // Slow enough that the other callers arrive while it is half built.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await sql`insert into built values (2)`;
      await sql.end();
    };
    // A build that dies midway (a killed run on a server that outlives it) leaves no template.
    const dying = async (url: string) => {
      await build(url);
      throw new Error('killed');
    };
    await expect(ensureTemplateDatabase(template, dying)).rejects.toThrow('killed');
    builds = 0;
    await Promise.all([1, 2, 3].map(() => ensureTemplateDatabase(template, build)));
    expect(builds).toBe(1);

    const copies = await Promise.all(
      [1, 2].map(() => createEmptyTestDatabase('copy', { template })),
    );
    try {
      for (const copy of copies) {
        const sql = postgres(copy.url, { max: 1, onnotice: () => {} });
        expect(await sql`select step from built`).toEqual([{ step: 2 }]);
        await sql`insert into built values (3)`;
        await sql.end();
      }
      // Each copy is its own database: the template kept what its build wrote.
      const sql = postgres(withDatabase(testAdminUrl(), template), { max: 1 });
      expect(await sql`select step from built`).toEqual([{ step: 2 }]);
      await sql.end();
    } finally {
      await Promise.all(copies.map((copy) => copy.drop()));
    }
  });
});
