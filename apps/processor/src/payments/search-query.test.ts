import { describe, expect, it } from 'vitest';
import { StripeApiError } from '../stripe/stripe-error.ts';
import { parseSearchQuery } from './search-query.ts';

describe('parseSearchQuery', () => {
  it('reads metadata clauses with either quote style, joined by AND', () => {
    expect(parseSearchQuery(`metadata['order']:'42' AND metadata["tenant"]:"a b"`)).toEqual({
      combinator: 'AND',
      clauses: [
        { field: 'metadata', key: 'order', op: ':', value: '42' },
        { field: 'metadata', key: 'tenant', op: ':', value: 'a b' },
      ],
    });
  });

  it('reads status, amount comparisons and OR', () => {
    expect(parseSearchQuery(`status:'succeeded' OR amount>=1000`)).toEqual({
      combinator: 'OR',
      clauses: [
        { field: 'status', op: ':', value: 'succeeded' },
        { field: 'amount', op: '>=', value: 1000 },
      ],
    });
  });

  it.each([
    `metadata['a']:'1' AND status:'x' OR currency:'usd'`,
    `nonsense`,
    `email:'a@b.c'`,
    `metadata['a']>'1'`,
  ])('refuses %s with a 400 on param query', (query) => {
    try {
      parseSearchQuery(query);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(StripeApiError);
      expect((error as StripeApiError).fields).toMatchObject({
        param: 'query',
        type: 'invalid_request_error',
      });
    }
  });
});
