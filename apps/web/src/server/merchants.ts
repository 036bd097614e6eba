import { tenants } from '@once/db/schema';
import { getWebRuntime } from './runtime.ts';

/** A merchant as the pages offer it: its id and name only (its keys never reach the browser). */
export interface MerchantChoice {
  id: string;
  name: string;
}

/**
 * The merchants this deployment's database holds, by id, for the pages' merchant pickers: the
 * demo merchants when the demo seed ran, whichever a deployment created otherwise.
 *
 * @example
 * const merchants = await listMerchants(); // [{ id: 'tenant_a', name: 'Acme Books' }, ...]
 */
export async function listMerchants(): Promise<MerchantChoice[]> {
  const { deps } = await getWebRuntime();
  return deps.db.select({ id: tenants.id, name: tenants.name }).from(tenants).orderBy(tenants.id);
}
