import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actionDownstreamKeyFor, paymentActionIdFor } from './action-ids.ts';
import { downstreamKeyFor } from './payment-ids.ts';
import { refundDownstreamKeyFor, refundIdFor } from './refund-ids.ts';

const request = 'k1';

describe('refund, capture and void ids and keys', () => {
  it('are derived from (tenant, key), whatever the transport: a request made again gets the same', () => {
    expect(refundIdFor('tenant_a', request)).toMatch(/^rf_[0-9a-f]{32}$/);
    expect(refundDownstreamKeyFor('tenant_a', request)).toMatch(/^once_rf_[0-9a-f]{64}$/);
    expect(paymentActionIdFor('capture', 'tenant_a', request)).toMatch(/^act_[0-9a-f]{32}$/);
    expect(actionDownstreamKeyFor('capture', 'tenant_a', request)).toMatch(
      /^once_cp_[0-9a-f]{64}$/,
    );
    expect(actionDownstreamKeyFor('void', 'tenant_a', request)).toMatch(/^once_vd_[0-9a-f]{64}$/);
    expect(refundIdFor('tenant_a', `${request}`)).toBe(refundIdFor('tenant_a', request));
    expect(refundDownstreamKeyFor('tenant_a', request)).not.toContain('k1');
  });

  it('no two requests (tenant, key) share an id or a processor key, whatever their kind', () => {
    const operatorRequest = fc.record({
      tenant: fc.constantFrom('tenant_a', 'tenant_b'),
      key: fc.string(),
    });
    fc.assert(
      fc.property(operatorRequest, operatorRequest, (a, b) => {
        const all = (r: { tenant: string; key: string }) => {
          const req = r.key;
          return [
            refundIdFor(r.tenant, req),
            paymentActionIdFor('capture', r.tenant, req),
            paymentActionIdFor('void', r.tenant, req),
            refundDownstreamKeyFor(r.tenant, req),
            actionDownstreamKeyFor('capture', r.tenant, req),
            actionDownstreamKeyFor('void', r.tenant, req),
          ];
        };
        const same = a.tenant === b.tenant && a.key === b.key;
        expect(new Set([...all(a), ...all(b)]).size).toBe(same ? 6 : 12);
        // A checkout under the same key text is another request again.
        expect(all(a)).not.toContain(downstreamKeyFor(a.tenant, a.key));
      }),
    );
  });
});
