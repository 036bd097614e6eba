import Stripe from 'stripe';

/** How the client retries a 429 by itself: bounded, with exponential backoff and jitter. */
interface LimitRetryPolicy {
  /** Retries after the first 429 (0: none). */
  retries: number;
  /** The first wait; doubled per retry, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** At most 3.5 s of waiting, well inside a lease; then the 429 is the outbox's to retry. */
const DEFAULT_LIMIT_RETRY: LimitRetryPolicy = { retries: 3, baseDelayMs: 250, maxDelayMs: 2_000 };

interface ProcessorClientOptions {
  /** The mock processor, or https://api.stripe.com. */
  processorUrl: string;
  /** Client-side timeout of one request; past it the attempt is ambiguous. */
  timeoutMs: number;
  limitRetry?: LimitRetryPolicy;
}

type MakeRequest = Stripe.HttpClient['makeRequest'];
type HttpResponse = Awaited<ReturnType<MakeRequest>>;

/**
 * Stripe's limiters run before its idempotency layer, so a 429 left the key unused and nothing
 * ran; Stripe advises retrying with backoff. `Stripe-Should-Retry: false` is obeyed.
 */
function isRetryableLimit(response: HttpResponse): boolean {
  return (
    response.getStatusCode() === 429 && response.getHeaders()['stripe-should-retry'] !== 'false'
  );
}

/** The wait before retry `n` (0-based): jittered into [half, whole] of the doubled base. */
function limitBackoffMs(policy: LimitRetryPolicy, n: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** n);
  return ceiling * (0.5 + Math.random() / 2);
}

/** The SDK's HTTP client, sending a 429'd request again unchanged (the same `Idempotency-Key`). */
class LimitRetryingHttpClient extends Stripe.HttpClient {
  constructor(
    private readonly inner: Stripe.HttpClient,
    private readonly policy: LimitRetryPolicy,
  ) {
    super();
  }

  override getClientName(): string {
    return this.inner.getClientName();
  }

  override async makeRequest(...request: Parameters<MakeRequest>): Promise<HttpResponse> {
    for (let retry = 0; ; retry++) {
      const response = await this.inner.makeRequest(...request);
      if (retry >= this.policy.retries || !isRetryableLimit(response)) return response;
      // Read the refusal to its end, so its keep-alive socket serves the retry.
      await response.toJSON().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, limitBackoffMs(this.policy, retry)));
    }
  }
}

/**
 * The official `stripe` SDK pointed at the processor, with `maxNetworkRetries: 0`: the outbox
 * owns retries of doubtful answers (backoff, restarts, dead letter). A 429 is no doubt
 * (nothing ran), so it alone is retried in place, with the same key.
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
    httpClient: new LimitRetryingHttpClient(
      Stripe.createNodeHttpClient(),
      options.limitRetry ?? DEFAULT_LIMIT_RETRY,
    ),
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
