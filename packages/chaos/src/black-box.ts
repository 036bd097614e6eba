import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkConformance, type Preset, probeIetf } from './conformance.ts';
import { DEFAULT_FAULT_MIX, type FaultMix, startFaultProxy } from './fault-proxy.ts';
import { History } from './history.ts';
import type { LedgerReader } from './ledger.ts';
import { seededRandom } from './random.ts';

export interface BlackBoxOptions {
  /** Base URL of the API under test. */
  target: string;
  /** The operation's path (default `/checkout`). */
  path?: string;
  seed: number;
  durationMs: number;
  preset: Preset;
  /** Reads the processor's charges after the run: enables the `double_charge` check. */
  ledger?: LedgerReader;
  /** The JSON body of operation `n`. */
  body?: (n: number, random: () => number) => unknown;
  concurrency?: number;
  mix?: FaultMix;
  /** Port of the fault proxy in front of the target (0: any). */
  proxyPort?: number;
  /**
   * A second fault proxy, in front of the target's processor: the target sends its processor
   * calls to `http://127.0.0.1:<port>` (its Stripe SDK's host and port), and the processor's
   * answers get lost too. Only the faults a network makes: dropped answers and delays.
   */
  downstream?: { upstream: string; port: number; mix?: FaultMix };
}

/** What the downstream proxy injects unless told otherwise. */
const DOWNSTREAM_MIX: FaultMix = { drop_answer: 0.2, delay: 0.1 };

export type BlackBoxResult = Awaited<ReturnType<typeof runBlackBox>>;

/**
 * One black-box run: a seeded fault proxy in front of `target`, retrying clients through it
 * for `durationMs`, the preset's probes, then the checks (and the ledger's, if given).
 *
 * @example
 * const result = await runBlackBox({ target: 'http://127.0.0.1:3000', seed: 1, durationMs: 30_000, preset: 'ietf' });
 * process.exitCode = result.violations.length === 0 ? 0 : 1;
 */
export async function runBlackBox(options: BlackBoxOptions) {
  const path = options.path ?? '/checkout';
  const keyPrefix = `once-chaos-${options.seed}-${randomBytes(4).toString('hex')}-`;
  const proxy = await startFaultProxy({
    upstream: options.target,
    seed: options.seed,
    mix: options.mix ?? DEFAULT_FAULT_MIX,
    keyPrefix,
    ...(options.proxyPort === undefined ? {} : { port: options.proxyPort }),
  });
  const downstream = options.downstream
    ? await startFaultProxy({
        upstream: options.downstream.upstream,
        port: options.downstream.port,
        keyPrefix,
        seed: options.seed,
        mix: options.downstream.mix ?? DOWNSTREAM_MIX,
      })
    : undefined;
  const body = options.body ?? defaultBody;
  try {
    const load = await runLoad({
      url: proxy.url,
      path,
      seed: options.seed,
      durationMs: options.durationMs,
      keyPrefix,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      body,
    });
    await proxy.drain();
    await downstream?.drain();
    // The probes ask the target itself, with no fault on either side.
    downstream?.calm();
    const probes =
      options.preset === 'ietf'
        ? await probeIetf({
            url: options.target,
            path,
            keyPrefix,
            body: (variant) =>
              body(1_000_000 + variant, seededRandom(options.seed, `probe-${variant}`)),
          })
        : [];
    const charges = options.ledger
      ? (await options.ledger()).filter((charge) => charge.key.startsWith(keyPrefix))
      : undefined;
    const violations = checkConformance({
      preset: options.preset,
      attempts: proxy.attempts,
      probes,
      ...(charges ? { charges } : {}),
    });
    const outcomes = { ok: 0, fail: 0, info: 0 };
    for (const event of load.history.events) {
      if ('op' in event && event.type !== 'invoke') outcomes[event.type]++;
    }
    return {
      seed: options.seed,
      preset: options.preset,
      target: options.target,
      durationMs: options.durationMs,
      operations: load.operations,
      // Requests the clients sent, and those that reached the target (with the proxy's copies).
      clientRequests: load.history.events.filter((event) => event.type === 'invoke').length,
      upstreamRequests: proxy.attempts.length,
      outcomes,
      gaveUp: load.gaveUp,
      faults: { ...proxy.faults },
      downstreamFaults: downstream ? { ...downstream.faults } : null,
      charges: charges?.length ?? null,
      violations,
      history: load.history.events,
    };
  } finally {
    await proxy.close();
    await downstream?.close();
  }
}

/**
 * The clients' side of a run: they call `url` (the fault proxy) with keys `<keyPrefix><n>`,
 * unique per run, so a target's stored keys from an earlier run never meet this one's.
 */
type LoadOptions = Pick<BlackBoxOptions, 'seed' | 'durationMs' | 'concurrency'> & {
  url: string;
  path: string;
  keyPrefix: string;
  /** The JSON body of operation `n` (same body on every retry of it). */
  body: (n: number, random: () => number) => unknown;
};

/** Statuses a real client retries with the same key: in flight, rate-limited, unavailable. */
const RETRYABLE = new Set([409, 425, 429, 502, 503, 504]);
/** Attempts per operation before a client gives up (its last outcome stays `info`). */
const MAX_ATTEMPTS = 6;
const TIMEOUT_MS = 5_000;
/** The longest `Retry-After` honoured (a longer one is cut to this). */
const MAX_RETRY_AFTER_MS = 2_000;

/** Clients as careful real ones: a fresh key per operation, the same key and body on every retry. */
async function runLoad(options: LoadOptions) {
  const { body } = options;
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
function defaultBody(n: number, random: () => number): unknown {
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
