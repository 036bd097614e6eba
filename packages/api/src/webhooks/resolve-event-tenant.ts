import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import type { Database } from '../database.ts';

/**
 * The tenant a processor event belongs to: the connected `account` the processor names
 * (authoritative: it signed the event), else the `tenant_id` our worker put in the
 * PaymentIntent's metadata. Both present and disagreeing means the event is not ours to
 * apply: undefined.
 */
export async function resolveEventTenant(
  db: Database,
  event: { account?: string | null; metadata?: Record<string, string> | null },
): Promise<string | undefined> {
  const fromMetadata = event.metadata?.tenant_id;
  const [exists] = fromMetadata
    ? await db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, fromMetadata)).limit(1)
    : [];
  if (!event.account) return exists?.id;
  const [byAccount] = await db
    .select({ id: tenants.id })
    .from(tenants)
    .where(eq(tenants.processorAccountId, event.account))
    .limit(1);
  if (!byAccount) return undefined;
  if (fromMetadata !== undefined && fromMetadata !== byAccount.id) return undefined;
  return byAccount.id;
}
