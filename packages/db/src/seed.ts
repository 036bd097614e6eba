import { and, eq, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import { hashApiKey } from './api-key.ts';
import type { Database } from './client.ts';
import { operatorSessions, products, tenants } from './schema/index.ts';

/** A demo product, priced in minor units (cents). */
interface DemoProduct {
  id: string;
  name: string;
  unitAmount: number;
  currency: string;
}

/**
 * A demo merchant. Its REST API key (stored only as SHA-256) is the public test key below
 * unless the deployment gave one (`demoTenantsWithApiKeys`).
 */
interface DemoTenant {
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

/** A demo merchant's API key by tenant id, as a deployment was given it; unset or empty: none. */
type DemoApiKeys = Readonly<Record<string, string | undefined>>;

/** The variable that gives each demo merchant its key (docs/process-contract.md). */
const API_KEY_VARIABLES: Readonly<Record<string, string>> = {
  tenant_a: 'ONCE_DEMO_API_KEY_TENANT_A',
  tenant_b: 'ONCE_DEMO_API_KEY_TENANT_B',
};

/**
 * The demo merchants with the API keys a deployment was given (its callers read them from
 * ONCE_DEMO_API_KEY_TENANT_A / _B); a merchant given none keeps its public test key, as
 * `npm run demo` on loopback and the tests use it.
 */
export function demoTenantsWithApiKeys(keys: DemoApiKeys): DemoTenant[] {
  return demoTenants.map((tenant) => {
    const apiKey = keys[tenant.id]?.trim();
    return apiKey ? { ...tenant, apiKey } : tenant;
  });
}

/**
 * Why `tenants` may not be seeded where nothing written in the repository may open anything
 * (`NODE_ENV=production`; the callers decide where that applies), as one line saying what to
 * do, or undefined. Refused: a merchant whose key is any demo merchant's public test key.
 */
export function publicDemoKeyProblem(
  tenants: readonly DemoTenant[],
  orElse: string,
): string | undefined {
  const publicKeys = new Set(demoTenants.map((tenant) => tenant.apiKey));
  const exposed = tenants.find((tenant) => publicKeys.has(tenant.apiKey));
  if (!exposed) return undefined;
  const variable = API_KEY_VARIABLES[exposed.id] ?? `the API key of ${exposed.id}`;
  return (
    `${variable} is unset or a public test key: the demo merchant ${exposed.id} would open with ` +
    'an API key written in the repository, refused with NODE_ENV=production: set ' +
    `${Object.values(API_KEY_VARIABLES).join(' and ')} (\`sh scripts/compose-secrets.sh\` ` +
    `writes both to .env), or ${orElse}`
  );
}

/**
 * Writes the demo tenants and their catalogues. Idempotent and safe to run from several
 * processes at once: every row is an upsert, so a second run (or a concurrent one) leaves
 * exactly the same rows, and a demo whose prices were edited by hand is restored. A run
 * with a new API key replaces the stored hash: the old key stops working, and so does every
 * operator session it opened.
 */
export async function seedDemoData(
  db: Database,
  data: readonly DemoTenant[] = demoTenants,
): Promise<void> {
  await db.transaction(async (tx) => {
    for (const tenant of data) {
      const row = {
        name: tenant.name,
        apiKeySha256: hashApiKey(tenant.apiKey),
        processorSecretKey: tenant.processorSecretKey,
        processorAccountId: tenant.processorAccountId,
      };
      await tx
        .insert(tenants)
        .values({ id: tenant.id, ...row })
        .onConflictDoUpdate({ target: tenants.id, set: row });
      // A rotated key ends the operator sessions the old one opened, in the same commit.
      await tx
        .update(operatorSessions)
        .set({ endedAt: sql`now()` })
        .where(
          and(
            eq(operatorSessions.tenantId, tenant.id),
            isNull(operatorSessions.endedAt),
            isNotNull(operatorSessions.apiKeySha256),
            ne(operatorSessions.apiKeySha256, row.apiKeySha256),
          ),
        );
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
