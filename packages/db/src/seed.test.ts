import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from './api-key.ts';
import { products, tenants } from './schema/index.ts';
import { demoTenants, demoTenantsWithApiKeys, publicDemoKeyProblem, seedDemoData } from './seed.ts';
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

  it('stores the hash of a key the deployment gave, and a re-seed with a new key replaces it', async () => {
    const { db } = test.client;
    const hashes = async () =>
      (await db.select().from(tenants).orderBy(tenants.id)).map((r) => r.apiKeySha256);
    const first = `once_live_${'a1'.repeat(32)}`;
    await seedDemoData(db, demoTenantsWithApiKeys({ tenant_a: first }));
    expect(await hashes()).toEqual([hashApiKey(first), hashApiKey('once_test_tenant_b')]);
    const rotated = `once_live_${'b2'.repeat(32)}`;
    await seedDemoData(db, demoTenantsWithApiKeys({ tenant_a: rotated, tenant_b: first }));
    expect(await hashes()).toEqual([hashApiKey(rotated), hashApiKey(first)]);
    // Back to the public test keys (none given): the stored hashes follow.
    await seedDemoData(db, demoTenantsWithApiKeys({}));
    expect(await hashes()).toEqual([
      hashApiKey('once_test_tenant_a'),
      hashApiKey('once_test_tenant_b'),
    ]);
  });
});

describe('demoTenantsWithApiKeys and publicDemoKeyProblem', () => {
  it('takes each given key, trimmed; unset or empty keeps the public test key; pure', () => {
    const given = demoTenantsWithApiKeys({ tenant_a: '  key-a  ', tenant_b: '' });
    expect(given.map((t) => [t.id, t.apiKey])).toEqual([
      ['tenant_a', 'key-a'],
      ['tenant_b', 'once_test_tenant_b'],
    ]);
    expect(demoTenants.map((t) => t.apiKey)).toEqual(['once_test_tenant_a', 'once_test_tenant_b']);
    expect(given[0]!.products).toEqual(demoTenants[0]!.products);
  });

  it('refuses any public test key in one line naming the variable to set, and takes own keys', () => {
    expect(publicDemoKeyProblem(demoTenantsWithApiKeys({}), 'ONCE_SEED_DEMO=0')).toMatch(
      /^ONCE_DEMO_API_KEY_TENANT_A is unset or a public test key: .*refused with NODE_ENV=production: set ONCE_DEMO_API_KEY_TENANT_A and ONCE_DEMO_API_KEY_TENANT_B \(`sh scripts\/compose-secrets\.sh` writes both to \.env\), or ONCE_SEED_DEMO=0$/,
    );
    expect(
      publicDemoKeyProblem(demoTenantsWithApiKeys({ tenant_a: 'own-a' }), 'ONCE_SEED_DEMO=0'),
    ).toMatch(/^ONCE_DEMO_API_KEY_TENANT_B is unset/);
    // Another merchant's public key is public too.
    expect(
      publicDemoKeyProblem(
        demoTenantsWithApiKeys({ tenant_a: 'once_test_tenant_b', tenant_b: 'own-b' }),
        'x',
      ),
    ).toMatch(/^ONCE_DEMO_API_KEY_TENANT_A/);
    expect(
      publicDemoKeyProblem(demoTenantsWithApiKeys({ tenant_a: 'own-a', tenant_b: 'own-b' }), 'x'),
    ).toBeUndefined();
  });
});
