import { readApiEnv } from '@once/api';
import Stripe from 'stripe';

/** The SDK for a tenant's secret key, pointed at the processor. */
export type ProcessorFor = (secretKey: string) => Stripe;

/** One answer is all a webhook waits for: a slow processor means 503, and a redelivery. */
const RETRIEVE_TIMEOUT_MS = 5_000;

/**
 * SDK clients for the processor at PROCESSOR_URL (one per tenant key), or undefined when
 * it is not set: then no webhook can be confirmed and each is answered 503.
 */
export function processorClientsFrom(
  env: Record<string, string | undefined>,
): ProcessorFor | undefined {
  const { processorUrl } = readApiEnv(env);
  if (!processorUrl) return undefined;
  const url = new URL(processorUrl);
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  const clients = new Map<string, Stripe>();
  return (secretKey) => {
    let client = clients.get(secretKey);
    if (!client) {
      client = new Stripe(secretKey, {
        host: url.hostname,
        port: url.port || (protocol === 'https' ? 443 : 80),
        protocol,
        timeout: RETRIEVE_TIMEOUT_MS,
        // The processor redelivers a webhook answered non-2xx: it is the retry.
        maxNetworkRetries: 0,
        telemetry: false,
      });
      clients.set(secretKey, client);
    }
    return client;
  };
}
