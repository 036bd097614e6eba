import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFormParams } from './form-params.ts';

/** Stripe's encoder (what stripe-node sends): nested keys in brackets, arrays indexed. */
function encode(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string')
    return [`${encodeURIComponent(prefix)}=${encodeURIComponent(value)}`];
  if (Array.isArray(value)) return value.flatMap((v, i) => encode(v, `${prefix}[${i}]`));
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
    encode(v, prefix ? `${prefix}[${k}]` : k),
  );
}

describe('parseFormParams', () => {
  it('decodes nested metadata, payment_method_data and arrays', () => {
    expect(
      parseFormParams(
        'amount=100&metadata[order]=42&metadata[note]=a%20b%26c&payment_method_data[card][number]=4242&expand[0]=x&expand[1]=y',
      ),
    ).toEqual({
      amount: '100',
      metadata: { order: '42', note: 'a b&c' },
      payment_method_data: { card: { number: '4242' } },
      expand: ['x', 'y'],
    });
  });

  it('ignores keys that would pollute Object.prototype', () => {
    expect(parseFormParams('__proto__[polluted]=1&a[constructor][prototype][x]=1&ok=1')).toEqual({
      ok: '1',
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('accepts empty brackets as array appends', () => {
    expect(parseFormParams('expand[]=a&expand[]=b')).toEqual({ expand: ['a', 'b'] });
  });

  it('round-trips anything Stripe can encode (keys without brackets, string leaves)', () => {
    const key = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/);
    const leaf = fc.string({ maxLength: 12 });
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.dictionary(key, tie('node'), { minKeys: 1, maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(fc.dictionary(key, tree, { minKeys: 1, maxKeys: 4 }), (params) => {
        expect(parseFormParams(encode(params).join('&'))).toEqual(params);
      }),
    );
  });
});
