import fc from 'fast-check';
import { buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  idempotentDirectiveTypeDefs,
  rootSelectionOf,
  UndecidableDirectiveError,
} from './idempotent-fields.ts';

// Documents here are not validated first: the guard must hold even where a server skips
// validation (persisted operations) or validation lets something through.
const schema = buildSchema(/* GraphQL */ `
  ${idempotentDirectiveTypeDefs}
  interface Root { pay(amount: Int!): Int }
  type Query { ok: Boolean, pay(amount: Int!): Int }
  type Mutation implements Root {
    pay(amount: Int!): Int @idempotent(operation: "payments.create")
    refund(id: Int!): Boolean
    "A field returning the mutation type: its fields run below the root, unguarded."
    nested: Mutation
  }
`);

const select = (query: string, variables: Record<string, unknown> = {}, name?: string) =>
  rootSelectionOf(schema, parse(query), name, variables);

/** The configs of the guarded root fields a document executes. */
const guardedConfigsOf = (query: string) =>
  select(query)?.guarded.map((field) => field.config) ?? [];

describe('rootSelectionOf', () => {
  it('finds the guarded field through inline fragments, named fragments and an interface condition', () => {
    for (const query of [
      'mutation { ... on Mutation { pay(amount: 1) } }',
      'mutation { ...P } fragment P on Mutation { ... { pay(amount: 1) } }',
      'mutation { ... on Root { pay(amount: 1) } }',
    ]) {
      expect(guardedConfigsOf(query)).toEqual([{ operation: 'payments.create', required: true }]);
    }
  });

  it('resolves arguments with variables and declared defaults, as written', () => {
    const selection = select('mutation($a: Int = 3) { charged: pay(amount: $a) refund(id: 2) }');
    expect(selection).toMatchObject({
      guarded: [{ responseKey: 'charged', name: 'pay', arguments: { amount: 3 } }],
      others: [{ responseKey: 'refund', name: 'refund', arguments: { id: 2 } }],
      unseen: [],
    });
    expect(select('mutation($a: Int = 3) { pay(amount: $a) }', { a: 5 })).toMatchObject({
      guarded: [{ arguments: { amount: 5 } }],
    });
  });

  it('an alias is another execution; the same response key merged from a fragment is one', () => {
    expect(select('mutation { a: pay(amount: 1) b: pay(amount: 1) }')?.guarded).toHaveLength(2);
    expect(
      select('mutation { pay(amount: 1) ... on Mutation { pay(amount: 1) } }')?.guarded,
    ).toHaveLength(1);
  });

  it('sees what @skip and @include leave out, from literals, variables and defaults', () => {
    const query = `mutation($s: Boolean!, $i: Boolean = true) {
      a: pay(amount: 1) @skip(if: $s)
      b: pay(amount: 1) @include(if: $i)
      ... @include(if: false) { c: pay(amount: 1) }
    }`;
    expect(select(query, { s: true })?.guarded.map((f) => f.responseKey)).toEqual(['b']);
    expect(select(query, { s: false, i: false })?.guarded.map((f) => f.responseKey)).toEqual(['a']);
  });

  it('an @skip / @include the variables do not decide is undecidable', () => {
    for (const variables of [{}, { s: null }, { s: 'yes' }]) {
      expect(() =>
        select('mutation($s: Boolean) { pay(amount: 1) @skip(if: $s) }', variables),
      ).toThrow(UndecidableDirectiveError);
    }
  });

  it('a guarded field where the guard cannot see it run is unseen', () => {
    const unseen = (query: string) => select(query)?.unseen.length;
    // On a type without such a field (validation would refuse it).
    expect(unseen('mutation { ... on Payment { pay(amount: 1) } }')).toBe(1);
    // Below another field returning the mutation type: it would run unguarded.
    expect(unseen('mutation { nested { pay(amount: 1) } }')).toBe(1);
    expect(unseen('mutation { nested { ...P } } fragment P on Mutation { pay(amount: 1) }')).toBe(
      1,
    );
    // Query.pay is not the guarded field, and the fragment does not apply: nothing runs.
    expect(unseen('mutation { ... on Query { pay(amount: 1) } }')).toBe(0);
    expect(unseen('mutation { ...P } fragment P on Mutation { pay(amount: 1) }')).toBe(0);
  });

  it('queries, and schemas without guarded mutations, are not looked at', () => {
    expect(select('{ pay(amount: 1) }')).toBeUndefined();
    const plain = buildSchema('type Query { ok: Boolean } type Mutation { pay: Int }');
    expect(rootSelectionOf(plain, parse('mutation { pay }'), null, {})).toBeUndefined();
  });

  it('property: however deep fragments nest the guarded fields, each executed alias is counted once', () => {
    type Wrap = 'inline' | 'untyped' | 'named' | 'include' | 'skip';
    const wrapped = fc.record({
      wrappers: fc.array(fc.constantFrom<Wrap>('inline', 'untyped', 'named', 'include', 'skip'), {
        maxLength: 4,
      }),
      alias: fc.constantFrom('pay', 'a', 'b'),
      excluded: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(wrapped, { minLength: 1, maxLength: 4 }), (fields) => {
        const fragments: string[] = [];
        const expected = new Set<string>();
        const selections = fields.map(({ wrappers, alias, excluded }) => {
          // `$off` is false and `$on` true: whether a field runs is known from the model.
          let runs = true;
          let selection = `${alias}: pay(amount: 1)`;
          for (const wrap of wrappers) {
            if (wrap === 'named') {
              const name = `F${fragments.length}`;
              fragments.push(`fragment ${name} on Mutation { ${selection} }`);
              selection = `...${name}`;
            } else if (wrap === 'inline') selection = `... on Mutation { ${selection} }`;
            else if (wrap === 'untyped') selection = `... { ${selection} }`;
            else if (wrap === 'include') {
              selection = `... @include(if: ${excluded ? '$off' : '$on'}) { ${selection} }`;
              runs &&= !excluded;
            } else {
              selection = `... @skip(if: ${excluded ? '$on' : '$off'}) { ${selection} }`;
              runs &&= !excluded;
            }
          }
          if (runs) expected.add(alias);
          return selection;
        });
        const query = `mutation($on: Boolean!, $off: Boolean!) { ${selections.join(' ')} } ${fragments.join(' ')}`;
        const selection = select(query, { on: true, off: false });
        expect(selection?.unseen).toEqual([]);
        expect(new Set(selection?.guarded.map((f) => f.responseKey))).toEqual(expected);
        expect(selection?.guarded).toHaveLength(expected.size);
      }),
      { numRuns: 300 },
    );
  });
});
