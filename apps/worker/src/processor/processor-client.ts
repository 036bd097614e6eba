import Stripe from 'stripe';

/** How the client retries a 429 by itself: bounded, with exponential backoff and jitter. */
interface LimitRetryPolicy {
  /** Retries after the first 429 (0: none). */
  retries: number;
  /** The first wait; doubled per retry, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Three retries, waiting 0.25-0.5 s, 0.5-1 s, then 1-2 s: at most 3.5 s of waiting inside one
 * job attempt, well inside its lease. A limiter still refusing after that is the outbox's
 * to retry later (an ambiguous 429, same key).
 */
const DEFAULT_LIMIT_RETRY: LimitRetryPolicy = { retries: 3, baseDelayMs: 250, maxDelayMs: 2_000 };

export interface ProcessorClientOptions {
  /** e.g. http://127.0.0.1:4100, the mock processor (or https://api.stripe.com). */
  processorUrl: string;
  /** Client-side timeout of one request; past it the attempt is ambiguous. */
  timeoutMs: number;
  /** How a 429 is retried in place (default {@link DEFAULT_LIMIT_RETRY}). */
  limitRetry?: LimitRetryPolicy;
}

type MakeRequest = Stripe.HttpClient['makeRequest'];
type HttpResponse = Awaited<ReturnType<MakeRequest>>;

/**
 * A 429 the processor may be asked again: Stripe's limiters (rate limits, lock timeouts) run
 * before its idempotency layer, so a 429 left the request's key unused and nothing ran
 * (docs.stripe.com/error-low-level). Stripe's docs advise retrying 429s with exponential
 * backoff (rate-limits, "Handling limiting gracefully"; lock timeouts carry
 * `Stripe-Should-Retry: true`). `Stripe-Should-Retry: false` is obeyed: the API says a retry
 * would have no effect.
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

/**
 * The SDK's HTTP client with one addition: a 429 is sent again, the very same request (its
 * headers, so its `Idempotency-Key`, unchanged: never a new key), after a backoff. The SDK's
 * own retries stay off, because they would also retry timeouts, resets, 409s and 5xx, which
 * are the outbox's (see {@link createProcessorClient}).
 */
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
 * The official `stripe` SDK pointed at the processor. `maxNetworkRetries: 0` because the
 * outbox owns retries of doubtful answers: it spaces them with backoff, survives restarts,
 * and counts them towards the dead letter, none of which the SDK's in-process retries would
 * do. A 429 is no doubt (nothing ran), so it alone is retried in place, with the same key
 * ({@link LimitRetryingHttpClient}).
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
