import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cancelKeyFor,
  confirmKeyFor,
  downstreamKeyFor,
  newJobId,
  newPaymentId,
} from './payment-ids.ts';

describe('payment ids and keys', () => {
  it('payment and job ids have one form: a prefix and 32 hex digits', () => {
    expect(newPaymentId()).toMatch(/^pay_[0-9a-f]{32}$/);
    expect(newJobId()).toMatch(/^job_[0-9a-f]{32}$/);
    expect(newJobId()).not.toBe(newJobId());
  });

  it('the processor keys are derived from (tenant, checkout key), so a re-created payment sends the same', () => {
    const key = downstreamKeyFor('tenant_a', 'checkout-1');
    expect(key).toMatch(/^once_ck_[0-9a-f]{64}$/);
    expect(downstreamKeyFor('tenant_a', 'checkout-1')).toBe(key);
    expect(key).not.toContain('checkout-1');
    expect(confirmKeyFor(key)).toBe(`${key}:confirm`);
    expect(cancelKeyFor(key)).toBe(`${key}:cancel`);
  });

  it('no two checkouts, and no two calls of one checkout, share a processor key', () => {
    const checkout = fc.tuple(
      fc.constantFrom('tenant_a', 'tenant_b', 'tenant_a\u0000'),
      fc.string(),
    );
    fc.assert(
      fc.property(checkout, checkout, ([tenantA, keyA], [tenantB, keyB]) => {
        const keysOf = (tenant: string, key: string) => {
          const downstream = downstreamKeyFor(tenant, key);
          return [downstream, confirmKeyFor(downstream), cancelKeyFor(downstream)];
        };
        const all = [...keysOf(tenantA, keyA), ...keysOf(tenantB, keyB)];
        const same = tenantA === tenantB && keyA === keyB;
        expect(new Set(all).size).toBe(same ? 3 : 6);
        // The same checkout always gets the same keys.
        expect(keysOf(tenantA, keyA)).toEqual(keysOf(tenantA, keyA));
      }),
    );
  });
});
