import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from './api-key.ts';
import { products, tenants } from './schema/index.ts';
import { demoTenants, seedDemoData } from './seed.ts';
import { createTestDatabase, type TestDatabase } from './testing/index.ts';

describe('seedDemoData', () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase('seed');
  });
  afterAll(async () => {
    await test.drop();
  });

  it('writes both demo tenants with hashed API keys and their catalogues', async () => {
    await seedDemoData(test.client.db);
    const rows = await test.client.db.select().from(tenants).orderBy(tenants.id);
    expect(rows.map((r) => [r.id, r.name])).toEqual([
      ['tenant_a', 'Acme Books'],
      ['tenant_b', 'Globex Coffee'],
    ]);
    expect(rows[0]!.apiKeySha256).toBe(hashApiKey('once_test_tenant_a'));
    expect(rows[0]!.apiKeySha256).not.toContain('once_test');
    expect(rows.map((r) => r.processorSecretKey)).toEqual(['sk_test_tenant_a', 'sk_test_tenant_b']);
    const catalogue = await test.client.db.select().from(products);
    expect(catalogue).toHaveLength(demoTenants.flatMap((t) => t.products).length);
    for (const p of catalogue) expect(Number.isInteger(p.unitAmount)).toBe(true);
  });

  it('is idempotent, also when several processes seed at once, and restores edited prices', async () => {
    const { db, sql } = test.client;
    await sql`update products set unit_amount = 1 where tenant_id = 'tenant_a' and id = 'book_ddia'`;
    await Promise.all([seedDemoData(db), seedDemoData(db), seedDemoData(db)]);
    await seedDemoData(db);
    const [counts] = await sql<
      { tenants: number; products: number; price: number }[]
    >`select (select count(*)::int from tenants) as tenants,
             (select count(*)::int from products) as products,
             (select unit_amount from products where tenant_id = 'tenant_a' and id = 'book_ddia') as price`;
    expect(counts).toEqual({
      tenants: 2,
      products: demoTenants.flatMap((t) => t.products).length,
      price: 4599,
    });
  });
});
