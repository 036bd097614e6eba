import { sql } from 'drizzle-orm';
import { hashApiKey } from './api-key.ts';
import type { Database } from './client.ts';
import { products, tenants } from './schema/index.ts';

/** A demo product, priced in minor units (cents). */
export interface DemoProduct {
  id: string;
  name: string;
  unitAmount: number;
  currency: string;
}

/** A demo merchant: its REST API key is public test data, stored only as SHA-256. */
export interface DemoTenant {
  id: string;
  name: string;
  apiKey: string;
  processorSecretKey: string;
  processorAccountId: string;
  products: DemoProduct[];
}

/**
 * The two demo merchants. Their processor keys and account ids match the accounts the mock
 * processor seeds (`acct_tenant_a` / `sk_test_tenant_a`, ...), so a charge made with a
 * tenant's key lands in that tenant's ledger.
 */
export const demoTenants: readonly DemoTenant[] = [
  {
    id: 'tenant_a',
    name: 'Acme Books',
    apiKey: 'once_test_tenant_a',
    processorSecretKey: 'sk_test_tenant_a',
    processorAccountId: 'acct_tenant_a',
    products: [
      {
        id: 'book_ddia',
        name: 'Designing Data-Intensive Applications',
        unitAmount: 4599,
        currency: 'usd',
      },
      { id: 'book_sre', name: 'Site Reliability Engineering', unitAmount: 3999, currency: 'usd' },
      { id: 'book_pragprog', name: 'The Pragmatic Programmer', unitAmount: 4299, currency: 'usd' },
      { id: 'bookmark', name: 'Leather bookmark', unitAmount: 299, currency: 'usd' },
    ],
  },
  {
    id: 'tenant_b',
    name: 'Globex Coffee',
    apiKey: 'once_test_tenant_b',
    processorSecretKey: 'sk_test_tenant_b',
    processorAccountId: 'acct_tenant_b',
    products: [
      { id: 'espresso_beans', name: 'Espresso beans, 1 kg', unitAmount: 2450, currency: 'usd' },
      { id: 'filter_beans', name: 'Filter roast, 250 g', unitAmount: 1200, currency: 'usd' },
      { id: 'mug', name: 'Globex mug', unitAmount: 1500, currency: 'usd' },
      { id: 'gift_card', name: 'Gift card', unitAmount: 5000, currency: 'usd' },
    ],
  },
];

/**
 * Writes the demo tenants and their catalogues. Idempotent and safe to run from several
 * processes at once: every row is an upsert, so a second run (or a concurrent one) leaves
 * exactly the same rows, and a demo whose prices were edited by hand is restored.
 *
 * @example
 * const { db } = createDatabaseClient(url, { applicationName: 'once-web' });
 * await runMigrations(url);
 * await seedDemoData(db);
 */
export async function seedDemoData(
  db: Database,
  data: readonly DemoTenant[] = demoTenants,
): Promise<void> {
  await db.transaction(async (tx) => {
    for (const tenant of data) {
      const row = {
        id: tenant.id,
        name: tenant.name,
        apiKeySha256: hashApiKey(tenant.apiKey),
        processorSecretKey: tenant.processorSecretKey,
        processorAccountId: tenant.processorAccountId,
      };
      await tx
        .insert(tenants)
        .values(row)
        .onConflictDoUpdate({
          target: tenants.id,
          set: {
            name: row.name,
            apiKeySha256: row.apiKeySha256,
            processorSecretKey: row.processorSecretKey,
            processorAccountId: row.processorAccountId,
          },
        });
      if (tenant.products.length === 0) continue;
      await tx
        .insert(products)
        .values(tenant.products.map((p) => ({ tenantId: tenant.id, ...p })))
        .onConflictDoUpdate({
          target: [products.tenantId, products.id],
          set: {
            name: sql`excluded.name`,
            unitAmount: sql`excluded.unit_amount`,
            currency: sql`excluded.currency`,
          },
        });
    }
  });
}
