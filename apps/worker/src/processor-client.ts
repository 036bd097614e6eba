import Stripe from 'stripe';

export interface ProcessorClientOptions {
  /** e.g. http://127.0.0.1:4100, the mock processor (or https://api.stripe.com). */
  processorUrl: string;
  /** Client-side timeout of one request; past it the attempt is ambiguous. */
  timeoutMs: number;
}

/**
 * The official `stripe` SDK pointed at the processor. `maxNetworkRetries: 0` because the
 * outbox owns retries: it spaces them with backoff, survives restarts, and counts them
 * towards the dead letter, none of which the SDK's in-process retries would do.
 *
 * @example
 * const stripe = createProcessorClient('sk_test_tenant_a', { processorUrl: 'http://127.0.0.1:4100', timeoutMs: 10_000 });
 */
export function createProcessorClient(secretKey: string, options: ProcessorClientOptions): Stripe {
  const url = new URL(options.processorUrl);
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return new Stripe(secretKey, {
    host: url.hostname,
    port: url.port || (protocol === 'https' ? 443 : 80),
    protocol,
    timeout: options.timeoutMs,
    maxNetworkRetries: 0,
    telemetry: false,
  });
}

/** One SDK instance per tenant secret key (each holds its own keep-alive agent). */
export function createProcessorClients(
  options: ProcessorClientOptions,
): (secretKey: string) => Stripe {
  const clients = new Map<string, Stripe>();
  return (secretKey) => {
    let client = clients.get(secretKey);
    if (!client) {
      client = createProcessorClient(secretKey, options);
      clients.set(secretKey, client);
    }
    return client;
  };
}
