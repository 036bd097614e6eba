import { invalidParam } from '../stripe/stripe-error.ts';

/** One clause of Stripe's search query language, e.g. `metadata['order']:'42'`. */
export type SearchClause =
  | { field: 'metadata'; key: string; op: ':'; value: string }
  | { field: 'status' | 'currency' | 'customer'; op: ':'; value: string }
  | { field: 'amount' | 'created'; op: ':' | '>' | '<' | '>=' | '<='; value: number };

const CLAUSE =
  /^\s*(metadata\[(?:'([^']*)'|"([^"]*)")\]|[a-z_]+)\s*(>=|<=|:|>|<)\s*(?:'([^']*)'|"([^"]*)"|(-?\d+))\s*/;

/**
 * Parses the subset of Stripe's search query language that PaymentIntents need:
 * `metadata['k']:'v'`, `status:'succeeded'`, `currency:'usd'`, `customer:'cus_1'`,
 * `amount>1000`, `created>=1700000000`, joined by AND or by OR (Stripe forbids mixing them).
 */
export function parseSearchQuery(query: string): {
  clauses: SearchClause[];
  combinator: 'AND' | 'OR';
} {
  const clauses: SearchClause[] = [];
  const combinators = new Set<'AND' | 'OR'>();
  let rest = query;
  for (;;) {
    const match = CLAUSE.exec(rest);
    if (!match) throw invalidQuery(query);
    clauses.push(toClause(match, query));
    rest = rest.slice(match[0].length);
    if (rest.trim() === '') break;
    const joiner = /^(AND|OR)\s+/.exec(rest);
    if (!joiner) throw invalidQuery(query);
    combinators.add(joiner[1] as 'AND' | 'OR');
    rest = rest.slice(joiner[0].length);
  }
  if (combinators.size > 1) {
    throw invalidParam('query', 'Search queries cannot mix AND and OR.', 'search_query_invalid');
  }
  return { clauses, combinator: combinators.has('OR') ? 'OR' : 'AND' };
}

function toClause(match: RegExpExecArray, query: string): SearchClause {
  const [, field, keySingle, keyDouble, op, valueSingle, valueDouble, valueNumber] = match;
  const text = valueSingle ?? valueDouble;
  if (field!.startsWith('metadata[')) {
    if (op !== ':' || text === undefined) throw invalidQuery(query);
    return { field: 'metadata', key: (keySingle ?? keyDouble)!, op, value: text };
  }
  if (field === 'status' || field === 'currency' || field === 'customer') {
    if (op !== ':' || text === undefined) throw invalidQuery(query);
    return { field, op, value: text };
  }
  if (field === 'amount' || field === 'created') {
    const value = Number(valueNumber ?? text);
    if (!Number.isFinite(value)) throw invalidQuery(query);
    return { field, op: op as ':' | '>' | '<' | '>=' | '<=', value };
  }
  throw invalidParam(
    'query',
    `Field '${field}' is not supported in a payment_intents search.`,
    'search_query_invalid',
  );
}

function invalidQuery(query: string) {
  return invalidParam(
    'query',
    `Could not parse the search query: ${query}`,
    'search_query_invalid',
  );
}
