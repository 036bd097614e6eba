import { beforeEach, describe, expect, it, vi } from 'vitest';

// The database is stood in for by a query that answers or fails on demand: what is under test is
// only what the page does with the answer (the real query is exercised by every page spec).
const query = vi.fn<() => Promise<{ id: string; name: string }[]>>();
vi.mock('./runtime.ts', () => ({
  getWebRuntime: async () => ({
    deps: { db: { select: () => ({ from: () => ({ orderBy: () => query() }) }) } },
  }),
}));

describe('listMerchants', () => {
  beforeEach(() => {
    vi.resetModules();
    query.mockReset();
  });

  it('answers the last list it read while the database is unreachable', async () => {
    const { listMerchants } = await import('./merchants.ts');
    query.mockResolvedValueOnce([{ id: 'tenant_a', name: 'Acme Books' }]);
    expect(await listMerchants()).toEqual([{ id: 'tenant_a', name: 'Acme Books' }]);
    query.mockRejectedValueOnce(new Error('connect ECONNREFUSED'));
    expect(await listMerchants()).toEqual([{ id: 'tenant_a', name: 'Acme Books' }]);
  });

  it('fails when it never read a list (the error page says the store is unavailable)', async () => {
    const { listMerchants } = await import('./merchants.ts');
    query.mockRejectedValueOnce(new Error('connect ECONNREFUSED'));
    await expect(listMerchants()).rejects.toThrow('ECONNREFUSED');
  });
});
