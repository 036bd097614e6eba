import { setTimeout as sleep } from 'node:timers/promises';
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
  /**
   * Keys are `<keyPrefix><n>`: unique per run, so a target's stored keys from an earlier run
   * never meet this one's; the fault proxy draws from what follows the prefix.
   */
  keyPrefix: string;
  /** The JSON body of operation `n` (same body on every retry of it). */
  body?: (n: number, random: () => number) => unknown;
}

/** Statuses a real client retries with the same key: in flight, rate-limited, unavailable. */
const RETRYABLE = new Set([409, 425, 429, 502, 503, 504]);
/** Attempts per operation before a client gives up (its last outcome stays `info`). */
const MAX_ATTEMPTS = 6;
const TIMEOUT_MS = 5_000;
/** The longest `Retry-After` honoured (a longer one is cut to this). */
const MAX_RETRY_AFTER_MS = 2_000;

/**
 * Clients that behave as careful real ones do: one fresh `Idempotency-Key` per operation, the
 * same key and body on every retry, retry after no answer or a retryable status, honour
 * `Retry-After` (else exponential backoff with jitter), give up after six attempts.
 */
export async function runLoad(options: LoadOptions) {
  const body = options.body ?? defaultBody;
  const history = new History();
  const deadline = Date.now() + options.durationMs;
  let next = 0;
  let gaveUp = 0;

  const client = async (process: string): Promise<void> => {
    while (Date.now() < deadline) {
      const n = next++;
      const random = seededRandom(options.seed, `operation-${n}`);
      const key = `${options.keyPrefix}${n}`;
      const payload = JSON.stringify(body(n, random));
      let settled = false;
      for (let attempt = 1; attempt <= MAX_ATTEMPTS && !settled; attempt++) {
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
            signal: AbortSignal.timeout(TIMEOUT_MS),
          });
          await response.arrayBuffer();
          complete(response.ok ? 'ok' : 'fail', { status: response.status });
          if (!RETRYABLE.has(response.status)) settled = true;
          const retryAfter = retryAfterMs(response.headers.get('retry-after'));
          if (retryAfter !== null) wait = Math.min(retryAfter, MAX_RETRY_AFTER_MS);
        } catch (error) {
          complete('info', { error: describe(error) });
        }
        if (!settled && attempt < MAX_ATTEMPTS) await sleep(wait);
      }
      if (!settled) gaveUp++;
    }
  };
  await Promise.all(
    Array.from({ length: options.concurrency ?? 4 }, (_, i) => client(`client-${i}`)),
  );
  // Each operation is one intent (`operation-<n>`); `gaveUp`: those with no definite answer.
  return { history, operations: next, gaveUp };
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
