import { randomBytes } from 'node:crypto';
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
 *
 * @example
 * const rows = await db.select().from(refunds).limit(limit + 1);
 * return stripeListPage(rows, limit, renderRefund, '/v1/refunds');
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
