import { tenants } from '@once/db/schema';
import { getWebRuntime } from './runtime.ts';

/** A merchant as the pages offer it: its id and name only (its keys never reach the browser). */
export interface MerchantChoice {
  id: string;
  name: string;
}

// Merchants change rarely: during a database outage the picker still renders from the last
// list read, and the page's payment requests meet the outage themselves.
let lastRead: MerchantChoice[] | undefined;

/** The merchants this deployment's database holds, by id, for the pages' pickers. */
export async function listMerchants(): Promise<MerchantChoice[]> {
  try {
    const { deps } = await getWebRuntime();
    lastRead = await deps.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .orderBy(tenants.id);
    return lastRead;
  } catch (error) {
    if (lastRead) return lastRead;
    throw error;
  }
}
