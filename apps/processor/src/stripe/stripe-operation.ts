import { randomBytes } from 'node:crypto';
import { and, type Column, eq, type SQL, sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import type { accounts } from '../db/schema/index.ts';
import { type FormParams, readString } from './form-params.ts';
import { resourceMissing } from './stripe-error.ts';

export type Account = typeof accounts.$inferSelect;

/** What an operation answers: an HTTP status and a Stripe-shaped JSON body. */
export interface StripeResult {
  status: number;
  body: unknown;
}

/** Everything an operation may read about the request; the account comes from the API key. */
interface OperationInput {
  account: Account;
  params: FormParams;
  pathParams: Record<string, string>;
  /** The request's `Idempotency-Key`, recorded on ledger rows and events. */
  idempotencyKey: string | null;
  timing: OperationTiming;
  /** Where a shopper's browser reaches this processor's hosted 3-D Secure challenge. */
  challengeBaseUrl: string;
}

/** The processor's own delays an operation schedules by (on the database clock). */
export interface OperationTiming {
  /** How long an authorisation stays capturable (`PROCESSOR_AUTHORIZATION_WINDOW_MS`). */
  authorizationWindowMs: number;
  /** When an asynchronous refund changes status (`PROCESSOR_REFUND_SETTLE_MS`). */
  refundSettleMs: number;
}

/**
 * A Stripe API operation. It runs inside the caller's transaction, so its writes, the
 * ledger row and the stored idempotent response commit or roll back together. Validation
 * failures throw {@link StripeApiError} (nothing is written); deliberate outcomes such as
 * a declined card are returned as results (they are stored and replayed).
 */
export type StripeOperation = (
  tx: ProcessorTransaction,
  input: OperationInput,
) => Promise<StripeResult>;

/** A read-only operation: runs on the pool (or inside a transaction), writes nothing. */
export type ReadOperation = (
  db: ProcessorDatabase | ProcessorTransaction,
  input: OperationInput,
) => Promise<StripeResult>;

/** A new Stripe request id (`req_...`): one per API request, as its `Request-Id` header. */
export const newRequestId = () => `req_${randomBytes(8).toString('hex')}`;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A Stripe-style object id: prefix, underscore, 24 random alphanumerics (`pi_3Pq0aZ...`). */
export function newObjectId(prefix: 'pi' | 'ch' | 're' | 'evt' | 'fault' | 'pm'): string {
  let out = '';
  for (const byte of randomBytes(24)) out += ALPHABET[byte % ALPHABET.length];
  return `${prefix}_${out}`;
}

/** A Stripe JSON response with a `Request-Id`, as the SDK expects. */
export function stripeResponse(result: StripeResult, requestId = newRequestId()): Response {
  return new Response(JSON.stringify(result.body, null, 2), {
    status: result.status,
    headers: { 'content-type': 'application/json', 'request-id': requestId },
  });
}

/**
 * A page of a Stripe list (`object: 'list'`) from rows read one past `limit`: the extra row
 * only says there is more (`has_more`), it is not shown.
 */
export function stripeListPage<TRow>(
  rows: readonly TRow[],
  limit: number,
  render: (row: TRow) => unknown,
  url: string,
): StripeResult {
  return {
    status: 200,
    body: {
      object: 'list',
      data: rows.slice(0, limit).map(render),
      has_more: rows.length > limit,
      url,
    },
  };
}

type OwnedTable = PgTable & { id: Column; accountId: Column; createdAt: Column };

/**
 * The account's object with this id, or Stripe's 404 naming `param` (another account's id is
 * "no such" too); `forUpdate` holds its row lock until the transaction ends.
 */
export async function loadOwned<T extends OwnedTable>(
  db: ProcessorDatabase | ProcessorTransaction,
  table: T,
  object: { name: string; id: string; accountId: string; param?: string; forUpdate?: boolean },
): Promise<T['$inferSelect']> {
  const query = db
    .select()
    .from(table as PgTable)
    .where(and(eq(table.id, object.id), eq(table.accountId, object.accountId)));
  const [row] = object.forUpdate ? await query.for('update') : await query;
  if (!row) throw resourceMissing(object.name, object.id, object.param ?? 'id');
  return row as T['$inferSelect'];
}

/**
 * A list's `starting_after` (an object of the account's, else 404): the rows after it, newest
 * first by (`created_at`, `id`). Compared in the database: a JS Date drops the microseconds of
 * `created_at`, so a row made in the cursor's millisecond but after it would sort above the
 * cursor and be skipped (the rows one transaction writes share it: only their ids tell them apart).
 */
export async function afterCursor(
  db: ProcessorDatabase | ProcessorTransaction,
  table: OwnedTable,
  object: { name: string; accountId: string; params: FormParams },
): Promise<SQL | undefined> {
  const id = readString(object.params, 'starting_after');
  if (!id) return undefined;
  await loadOwned(db, table, { ...object, id, param: 'starting_after' });
  return sql`(${table.createdAt}, ${table.id}) < (select created_at, id from ${table} where id = ${id})`;
}
