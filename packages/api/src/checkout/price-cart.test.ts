import { demoTenants } from '@once/db/seed';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiTestHarness, createApiTestHarness } from '../testing/api-test-harness.ts';
import { MAX_LINE_QUANTITY, priceCart } from './price-cart.ts';

describe('priceCart', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_price');
  });
  afterAll(async () => {
    await h.drop();
  });

  const catalogue = demoTenants.find((t) => t.id === 'tenant_a')!.products;
  const price = new Map(catalogue.map((p) => [p.id, p.unitAmount]));

  it('charges the catalogue price times the merged quantity, however the lines are split or ordered', async () => {
    const line = fc.record({
      productId: fc.constantFrom(...catalogue.map((p) => p.id)),
      quantity: fc.integer({ min: 1, max: 20 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 4 }), async (lines) => {
        const priced = await priceCart(h.deps.db, 'tenant_a', lines);
        const expected = lines.reduce((sum, l) => sum + price.get(l.productId)! * l.quantity, 0);
        expect(priced.amount).toBe(expected);
        expect(priced.currency).toBe('usd');
        // One line per product, in first-seen order.
        expect(priced.lines.map((l) => l.productId)).toEqual([
          ...new Set(lines.map((l) => l.productId)),
        ]);
        const reversed = await priceCart(h.deps.db, 'tenant_a', [...lines].reverse());
        expect(reversed.amount).toBe(priced.amount);
      }),
      { numRuns: 40 },
    );
  });

  it('refuses a merged quantity above the limit even when every line is within it', async () => {
    const half = Math.ceil((MAX_LINE_QUANTITY + 1) / 2);
    await expect(
      priceCart(h.deps.db, 'tenant_a', [
        { productId: 'bookmark', quantity: half },
        { productId: 'bookmark', quantity: half },
      ]),
    ).rejects.toMatchObject({ code: 'quantity_out_of_range' });
  });
});
