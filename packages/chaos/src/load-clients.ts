import { History } from './history.ts';
import { seededRandom } from './random.ts';

export interface LoadOptions {
  /** Base URL the clients call (the fault proxy's). */
  url: string;
  /** Path of the operation, e.g. `/checkout`. */
  path: string;
  seed: number;
  /** How long clients start new operations, in ms. */
  durationMs: number;
  /** Clients running side by side. */
  concurrency?: number;
  /** Attempts per operation before the client gives up (its last outcome stays `info`). */
  maxAttempts?: number;
  /** Per-attempt timeout, in ms. */
  timeoutMs?: number;
  /** Longest `Retry-After` honoured, in ms (a longer one is cut to this). */
  maxRetryAfterMs?: number;
  /**
   * Keys are `<keyPrefix><n>`: unique per run, so a target's stored keys from an earlier run
   * never meet this one's; the fault proxy draws from what follows the prefix.
   */
  keyPrefix: string;
  /** The JSON body of operation `n` (same body on every retry of it). */
  body?: (n: number, random: () => number) => unknown;
}

export interface LoadResult {
  /** Each operation is one intent (`operation-<n>`), each request an invoke and its completion. */
  history: History;
  /** Operations started, and how many ended without a definite answer. */
  operations: number;
  gaveUp: number;
  /** Every key the clients used. */
  keys: string[];
}

/** Statuses a real client retries with the same key: in flight, rate-limited, unavailable. */
const RETRYABLE = new Set([409, 425, 429, 502, 503, 504]);

/**
 * Clients that behave as careful real ones do: one fresh `Idempotency-Key` per operation, the
 * same key and body on every retry, retry after no answer or a retryable status, honour
 * `Retry-After` (else exponential backoff with jitter), give up after `maxAttempts`.
 *
 * @example
 * const { history } = await runLoad({ url: proxy.url, path: '/checkout', seed: 1, durationMs: 5000, keyPrefix: 'run1-' });
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const concurrency = options.concurrency ?? 4;
  const maxAttempts = options.maxAttempts ?? 6;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 2_000;
  const body = options.body ?? defaultBody;
  const history = new History();
  const keys: string[] = [];
  const deadline = Date.now() + options.durationMs;
  let next = 0;
  let gaveUp = 0;

  const client = async (process: string): Promise<void> => {
    while (Date.now() < deadline) {
      const n = next++;
      const random = seededRandom(options.seed, `operation-${n}`);
      const key = `${options.keyPrefix}${n}`;
      keys.push(key);
      const payload = JSON.stringify(body(n, random));
      let settled = false;
      for (let attempt = 1; attempt <= maxAttempts && !settled; attempt++) {
        const complete = history.invoke({
          intent: `operation-${n}`,
          tenantId: '',
          key,
          process,
          f: 'pay',
        });
        let wait = backoff(attempt, random);
        try {
          const response = await fetch(`${options.url}${options.path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: payload,
            signal: AbortSignal.timeout(timeoutMs),
          });
          await response.arrayBuffer();
          complete(response.ok ? 'ok' : 'fail', { status: response.status });
          if (!RETRYABLE.has(response.status)) settled = true;
          const retryAfter = retryAfterMs(response.headers.get('retry-after'));
          if (retryAfter !== null) wait = Math.min(retryAfter, maxRetryAfterMs);
        } catch (error) {
          complete('info', { error: describe(error) });
        }
        if (!settled && attempt < maxAttempts) await sleep(wait);
      }
      if (!settled) gaveUp++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => client(`client-${i}`)));
  return { history, operations: next, gaveUp, keys };
}

/** A checkout-like body: an amount from the seed, a reference per operation. */
export function defaultBody(n: number, random: () => number): unknown {
  return { amount: 500 + Math.floor(random() * 9_500), currency: 'usd', reference: `order-${n}` };
}

function backoff(attempt: number, random: () => number): number {
  return Math.round(Math.min(1_000, 50 * 2 ** attempt) * (0.5 + random() / 2));
}

/** `Retry-After` as seconds or an HTTP date, in ms; null when absent or unreadable. */
function retryAfterMs(value: string | null): number | null {
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1_000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

function describe(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  return cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
