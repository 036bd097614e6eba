import { randomBytes } from 'node:crypto';
import { type Column, type SQL, sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { FormParams } from './form-params.ts';
import { readInteger } from './read-params.ts';
import { invalidParam } from './stripe-error.ts';
import type { StripeResult } from './stripe-operation.ts';

/** A new Stripe request id (`req_...`): one per API request, as its `Request-Id` header. */
export const newRequestId = () => `req_${randomBytes(8).toString('hex')}`;

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

/** A list's `limit`: 1 to 100, 10 when unset. */
export function readListLimit(params: FormParams): number {
  const limit = readInteger(params, 'limit') ?? 10;
  if (limit < 1 || limit > 100) throw invalidParam('limit', 'Limit must be between 1 and 100.');
  return limit;
}

/**
 * The rows after the `starting_after` cursor of a list newest first by (`created_at`, `id`).
 * Compared in the database: a JS Date drops the microseconds of `created_at`, so a row made in
 * the cursor's millisecond but after it would sort above the cursor and be skipped (the rows
 * one transaction writes share it: only their ids tell them apart).
 */
export function olderThanCursor(
  table: PgTable & { createdAt: Column; id: Column },
  cursorId: string,
): SQL {
  return sql`(${table.createdAt}, ${table.id}) < (select created_at, id from ${table} where id = ${cursorId})`;
}
