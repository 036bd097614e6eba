import { tenants } from '@once/db/schema';
import { getWebRuntime } from './runtime.ts';

/** A merchant as the pages offer it: its id and name only (its keys never reach the browser). */
export interface MerchantChoice {
  id: string;
  name: string;
}

// The last list this process read. Merchants change rarely, and a page that cannot reach the
// database for a moment (a restart, a failover) still renders the picker from it; the payment
// requests the page sends then meet the outage themselves and say so in plain words.
let lastRead: MerchantChoice[] | undefined;

/**
 * The merchants this deployment's database holds, by id, for the pages' merchant pickers: the
 * demo merchants when the demo seed ran, whichever a deployment created otherwise. During a
 * database outage it answers the last list this process read; with none, it throws (the page's
 * error boundary says the store is unavailable).
 *
 * @example
 * const merchants = await listMerchants(); // [{ id: 'tenant_a', name: 'Acme Books' }, ...]
 */
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
