import { randomBytes } from 'node:crypto';
import type { StripeResult } from './stripe-operation.ts';

/** A Stripe JSON response with a `Request-Id`, as the SDK expects. */
export function stripeResponse(result: StripeResult): Response {
  return new Response(JSON.stringify(result.body, null, 2), {
    status: result.status,
    headers: {
      'content-type': 'application/json',
      'request-id': `req_${randomBytes(8).toString('hex')}`,
    },
  });
}
