import Stripe from 'stripe';

/** The official SDK pointed at a local processor, as the worker configures it. */
export function stripeClient(
  baseUrl: string,
  secretKey: string,
  options: { timeout?: number } = {},
) {
  const url = new URL(baseUrl);
  return new Stripe(secretKey, {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 2,
    ...(options.timeout ? { timeout: options.timeout } : {}),
  });
}
