import { createHmac } from 'node:crypto';

/**
 * Stripe's documented webhook signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<payload>" keyed by the endpoint secret>`. Verifiable with the official SDK's
 * `stripe.webhooks.constructEvent(payload, header, secret)`.
 *
 * @example
 * signPayload(body, 'whsec_once_demo') // 't=1700000000,v1=5257a8...'
 */
export function signPayload(
  payload: string,
  secret: string,
  timestamp = Math.floor(Date.now() / 1000),
): string {
  const signature = createHmac('sha256', secret)
    .update(`${timestamp}.${payload}`, 'utf8')
    .digest('hex');
  return `t=${timestamp},v1=${signature}`;
}
