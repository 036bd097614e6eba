import type { IdempotencyStore, KeyIdentity } from '../core/types.ts';

/**
 * Stores that each break ONE promise of the store contract, wrapped around a real store, so
 * the contract's own tests can show it rejects them. Each is a mistake a store author could
 * plausibly make; none is meant for use.
 */
export const BROKEN_STORES: Record<
  string,
  <TTx>(store: IdempotencyStore<TTx>) => IdempotencyStore<TTx>
> = {
  /**
   * Reserve as "SELECT, then INSERT ... ON CONFLICT DO NOTHING, and trust the SELECT": two
   * racing requests both see no row and both believe they hold the key.
   */
  checkThenInsertReserve: (store) => ({
    ...store,
    async reserve(input) {
      if (await store.lookup(input)) return store.reserve(input);
      // The window between the check and the insert, where a racing request slips in.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const result = await store.reserve(input);
      if (result.kind !== 'existing') return result;
      return {
        kind: 'acquired',
        record: { ...result.record, state: 'in_progress', ownerToken: input.ownerToken },
        created: true,
        takenOver: false,
      };
    },
  }),

  /** Keys looked up by (operation, key) alone: one tenant's key answers another tenant. */
  tenantBlindKeys: (store) => {
    const blind = <T extends KeyIdentity>(id: T): T => ({ ...id, tenantId: 'every-tenant' });
    return {
      ...store,
      reserve: (input) => store.reserve(blind(input)),
      complete: (tx, id, token, response, ttlMs) =>
        store.complete(tx, blind(id), token, response, ttlMs),
      advance: (tx, id, token, point, data) => store.advance(tx, blind(id), token, point, data),
      renew: (id, token, leaseMs) => store.renew(blind(id), token, leaseMs),
      release: (id, token) => store.release(blind(id), token),
      endLease: (id, token) => store.endLease(blind(id), token),
      markUnknown: (id, token) => store.markUnknown(blind(id), token),
      isCompletedBy: (id, token) => store.isCompletedBy(blind(id), token),
      lookup: (id) => store.lookup(blind(id)),
      insertCompleted: (tx, input) => store.insertCompleted(tx, blind(input)),
    };
  },

  /** `complete` writes whatever row has the key, whoever holds it now (no owner-token fence). */
  completeIgnoresOwnerToken: (store) => ({
    ...store,
    async complete(tx, id, ownerToken, response, ttlMs) {
      const current = (await store.lookup(id))?.record.ownerToken;
      return store.complete(tx, id, current ?? ownerToken, response, ttlMs);
    },
  }),

  /** Leases that never expire: a crashed holder's key is stuck in progress for good. */
  leasesNeverExpire: (store) => ({
    ...store,
    reserve: (input) => store.reserve({ ...input, leaseMs: Math.max(input.leaseMs, 3_600_000) }),
  }),
};
