import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Database } from '../database.ts';

/** What a session needs of its tenant: that it exists, and its name. */
export interface SessionTenant {
  id: string;
  name: string;
}

interface Known {
  tenant: SessionTenant;
  readAt: number;
  /** The read under way in the background, if any (one per tenant at a time). */
  refreshing?: Promise<void>;
}

/**
 * The tenants signed sessions name, read from the database at most once per `maxAgeMs` each.
 * The session's HMAC already proves who signed in; the row only says the tenant still exists
 * and what it is called. So a request never waits on the database for a tenant it knows: past
 * `maxAgeMs` it is answered from the last row and the row is read again in the background,
 * and a tenant that read finds gone is refused from then on. A read that fails keeps the last
 * row. This is what lets the cockpit's Parts show a database that is down or failing over:
 * reading its state must not need the database.
 *
 * API keys are not cached: a revoked key must stop working at once.
 */
export class SessionTenants {
  readonly #known = new Map<string, Known>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly maxAgeMs = 60_000,
  ) {}

  async find(tenantId: string): Promise<SessionTenant | undefined> {
    const known = this.#known.get(tenantId);
    if (!known) return this.#read(tenantId);
    if (this.clock.now().getTime() - known.readAt >= this.maxAgeMs && !known.refreshing) {
      known.refreshing = this.#read(tenantId).then(
        () => undefined,
        () => {
          // The database is away: keep the last row, and read again at the next request.
          known.refreshing = undefined;
        },
      );
    }
    return known.tenant;
  }

  async #read(tenantId: string): Promise<SessionTenant | undefined> {
    const [tenant] = await this.db
      .select({ id: tenants.id, name: tenants.name })
      .from(tenants)
      .where(eq(tenants.id, tenantId))
      .limit(1);
    if (tenant) this.#known.set(tenantId, { tenant, readAt: this.clock.now().getTime() });
    else this.#known.delete(tenantId);
    return tenant;
  }
}
