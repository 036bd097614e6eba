import type { ProcessorDatabase } from './client.ts';
import { accounts } from './schema/index.ts';

/** The two merchant accounts every environment has (docs/process-contract.md). */
const SEEDED_ACCOUNTS = [
  { id: 'acct_tenant_a', secretKey: 'sk_test_tenant_a' },
  { id: 'acct_tenant_b', secretKey: 'sk_test_tenant_b' },
] as const;

/** Inserts the seeded accounts; running it again (every start) changes nothing. */
export async function seedAccounts(db: ProcessorDatabase): Promise<void> {
  await db
    .insert(accounts)
    .values([...SEEDED_ACCOUNTS])
    .onConflictDoNothing();
}
