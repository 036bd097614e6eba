import { and, desc, eq, gt, gte, lt, lte, or, type SQL, sql } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { paymentIntents } from '../db/schema/index.ts';
import { readListLimit, readString } from '../stripe/form-params.ts';
import { invalidParam } from '../stripe/stripe-error.ts';
import {
  afterCursor,
  loadOwned,
  type ReadOperation,
  stripeListPage,
} from '../stripe/stripe-operation.ts';
import { renderPaymentIntent } from './render-objects.ts';
import { parseSearchQuery, type SearchClause } from './search-query.ts';

/** A PaymentIntent of this account; `forUpdate` serialises confirms, captures and cancels. */
export function loadPaymentIntent(
  db: ProcessorDatabase | ProcessorTransaction,
  accountId: string,
  id: string,
  options: { forUpdate?: boolean; param?: string } = {},
) {
  const object = { name: 'payment_intent', id, accountId, param: 'intent', ...options };
  return loadOwned(db, paymentIntents, object);
}

/** `GET /v1/payment_intents/:id` */
export const retrievePaymentIntent: ReadOperation = async (db, { account, pathParams }) => {
  const intent = await loadPaymentIntent(db, account.id, pathParams.id!);
  return { status: 200, body: renderPaymentIntent(intent) };
};

const newestFirst = [desc(paymentIntents.createdAt), desc(paymentIntents.id)];

/** `GET /v1/payment_intents` (newest first; `limit`, `starting_after`, `customer`). */
export const listPaymentIntents: ReadOperation = async (db, { account, params }) => {
  const limit = readListLimit(params);
  const conditions: (SQL | undefined)[] = [eq(paymentIntents.accountId, account.id)];
  const customer = readString(params, 'customer');
  if (customer) conditions.push(eq(paymentIntents.customer, customer));
  const object = { name: 'payment_intent', accountId: account.id, params };
  conditions.push(await afterCursor(db, paymentIntents, object));
  if (readString(params, 'ending_before')) {
    throw invalidParam('ending_before', 'ending_before is not supported by this processor.');
  }
  const rows = await db
    .select()
    .from(paymentIntents)
    .where(and(...conditions))
    .orderBy(...newestFirst)
    .limit(limit + 1);
  return stripeListPage(rows, limit, renderPaymentIntent, '/v1/payment_intents');
};

/** `GET /v1/payment_intents/search?query=...` (Stripe's search language, subset). */
export const searchPaymentIntents: ReadOperation = async (db, { account, params }) => {
  const query = readString(params, 'query');
  if (!query) throw invalidParam('query', 'Missing required param: query.', 'parameter_missing');
  const parsed = parseSearchQuery(query);
  const limit = readListLimit(params);
  const page = readString(params, 'page');
  const offset = page ? decodePage(page) : 0;
  const matches = parsed.clauses.map(clauseCondition);
  const combined = parsed.combinator === 'AND' ? and(...matches) : or(...matches);
  const rows = await db
    .select()
    .from(paymentIntents)
    .where(and(eq(paymentIntents.accountId, account.id), combined))
    .orderBy(...newestFirst)
    .limit(limit + 1)
    .offset(offset);
  const hasMore = rows.length > limit;
  return {
    status: 200,
    body: {
      object: 'search_result',
      data: rows.slice(0, limit).map(renderPaymentIntent),
      has_more: hasMore,
      next_page: hasMore ? encodePage(offset + limit) : null,
      url: '/v1/payment_intents/search',
    },
  };
};

function clauseCondition(clause: SearchClause): SQL {
  switch (clause.field) {
    case 'metadata':
      // Containment uses the GIN index on metadata.
      return sql`${paymentIntents.metadata} @> ${JSON.stringify({ [clause.key]: clause.value })}::jsonb`;
    case 'status':
      return eq(paymentIntents.status, clause.value);
    case 'currency':
      return eq(paymentIntents.currency, clause.value.toLowerCase());
    case 'customer':
      return eq(paymentIntents.customer, clause.value);
    case 'amount':
      return COMPARE[clause.op](paymentIntents.amount, clause.value);
    case 'created':
      return COMPARE[clause.op](
        sql`extract(epoch from ${paymentIntents.createdAt})::bigint`,
        clause.value,
      );
  }
}

const COMPARE = { ':': eq, '>': gt, '<': lt, '>=': gte, '<=': lte } as const;

function encodePage(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString('base64url');
}

function decodePage(page: string): number {
  const match = /^offset:(\d+)$/.exec(Buffer.from(page, 'base64url').toString());
  if (!match) throw invalidParam('page', 'Invalid page token.');
  return Number(match[1]);
}
