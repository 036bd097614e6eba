import autocannon from 'autocannon';
import { type LatencySummary, median, summarize } from './stats.ts';

/** One autocannon load: fixed connections for a fixed time, after an unmeasured warm-up. */
export interface LoadOptions {
  url: string;
  path: string;
  method?: 'POST' | 'GET';
  /** A JSON body. */
  body?: string;
  connections: number;
  durationSec: number;
  /** Unmeasured run first (JIT, pools, caches); 0 to skip. */
  warmupSec?: number;
  /** Idempotency-Key of each request; omit for no header. */
  key?: () => string;
  /** Read response headers to count `Idempotent-Replayed: true` (autocannon then keeps bodies). */
  countReplays?: boolean;
  /** Stop after this many requests instead of the duration. */
  amount?: number;
  /** Reads the server process's CPU time (ms) so the run can report CPU per request. */
  serverCpuMs?: () => Promise<number>;
}

export interface LoadResult {
  durationSec: number;
  /** Responses per second over the measured run. */
  throughput: number;
  latency: LatencySummary;
  /** Response counts by HTTP status. */
  statuses: Record<string, number>;
  /** Connection errors and timeouts (no HTTP status). */
  errors: number;
  timeouts: number;
  replayed: number;
  /** Every response time (ms), kept so rounds can be merged. */
  samples: number[];
  /** Server process CPU time (ms) spent during the run, when `serverCpuMs` was given. */
  serverCpuMs?: number;
  /** Throughput of each interleaved round, in order (merged results only). */
  roundThroughputs?: number[];
  /** Server CPU per response (ms) of each interleaved round, when measured (merged results only). */
  roundServerCpuPerRequest?: number[];
}

/** Server CPU per response (ms), when measured. */
export function serverCpuPerRequest(result: LoadResult): number | undefined {
  return result.serverCpuMs === undefined
    ? undefined
    : result.serverCpuMs / Math.max(1, result.samples.length);
}

/**
 * Runs autocannon in this process against a server in ANOTHER process (so client and server
 * never share an event loop), keeping every response time so rounds can be merged.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  if (options.warmupSec)
    await runOnce({ ...options, durationSec: options.warmupSec, amount: undefined });
  return runOnce(options);
}

async function runOnce(options: LoadOptions): Promise<LoadResult> {
  if (!options.serverCpuMs) return runAutocannon(options);
  const before = await options.serverCpuMs();
  const result = await runAutocannon(options);
  return { ...result, serverCpuMs: (await options.serverCpuMs()) - before };
}

function runAutocannon(options: LoadOptions): Promise<LoadResult> {
  const samples: number[] = [];
  const statuses: Record<string, number> = {};
  let replayed = 0;
  const headers = { 'content-type': 'application/json' };
  const keyOf = options.key;
  const request: autocannon.Request = {
    method: options.method ?? 'POST',
    path: options.path,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(keyOf
      ? { setupRequest: (req) => ({ ...req, headers: { ...headers, 'idempotency-key': keyOf() } }) }
      : {}),
    ...(options.countReplays
      ? {
          onResponse: (_status, _body, _ctx, resHeaders) => {
            if (resHeaders?.['idempotent-replayed'] === 'true') replayed++;
          },
        }
      : {}),
  };
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        ...(options.amount ? { amount: options.amount } : { duration: options.durationSec }),
        requests: [request],
        timeout: 30,
      },
      (error, result) => {
        if (error) return reject(error);
        const durationSec = (performance.now() - started) / 1000;
        resolve({
          durationSec,
          throughput: samples.length / durationSec,
          latency: summarize(samples),
          statuses,
          errors: result.errors - result.timeouts,
          timeouts: result.timeouts,
          replayed,
          samples,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      samples.push(responseTime);
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    });
  });
}

/** A named load to run in interleaved rounds with others. */
export interface Variant {
  name: string;
  load: LoadOptions;
}

/**
 * Runs variants in interleaved rounds, every other one reversed (A B C, C B A, ...), and
 * merges each variant's rounds: a burst of background load or a drift over the run then hits
 * every variant alike. The warm-up runs once per variant, before round 1.
 */
export async function runInterleaved(
  variants: readonly Variant[],
  rounds: number,
): Promise<Map<string, LoadResult>> {
  const parts = new Map<string, LoadResult[]>(variants.map((v) => [v.name, []]));
  for (const v of variants) {
    if (v.load.warmupSec) await runOnce({ ...v.load, durationSec: v.load.warmupSec });
  }
  for (let round = 0; round < rounds; round++) {
    for (const v of round % 2 === 0 ? variants : variants.toReversed()) {
      parts
        .get(v.name)!
        .push(await runOnce({ ...v.load, durationSec: v.load.durationSec / rounds }));
    }
  }
  return new Map([...parts].map(([name, results]) => [name, mergeResults(results)]));
}

/** One result from several runs of the same load: all samples, summed time and counts. */
export function mergeResults(results: readonly LoadResult[]): LoadResult {
  const samples = results.flatMap((r) => r.samples);
  const sum = (of: (r: LoadResult) => number) => results.reduce((total, r) => total + of(r), 0);
  const statuses: Record<string, number> = {};
  for (const r of results)
    for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
  return {
    durationSec: sum((r) => r.durationSec),
    throughput: samples.length / sum((r) => r.durationSec),
    latency: summarize(samples),
    statuses,
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    replayed: sum((r) => r.replayed),
    samples,
    roundThroughputs: results.map((r) => r.throughput),
    ...(results.every((r) => r.serverCpuMs !== undefined)
      ? {
          serverCpuMs: sum((r) => r.serverCpuMs!),
          roundServerCpuPerRequest: results.map((r) => serverCpuPerRequest(r)!),
        }
      : {}),
  };
}

/** A paired comparison of a variant with its twin over the rounds: the median and the spread. */
export interface Paired {
  median: number;
  min: number;
  max: number;
  rounds: number;
}

/** `Paired` of throughputs, with the ratio of whole-run throughputs for comparison. */
export interface PairedRatio extends Paired {
  whole: number;
}

/** Round i of `a` against round i of `b` by `compare`; undefined when the rounds do not pair. */
function paired(
  a: readonly number[] | undefined,
  b: readonly number[] | undefined,
  compare: (x: number, y: number) => number,
): Paired | undefined {
  if (!a || !b || a.length !== b.length || a.length === 0) return undefined;
  const sorted = a.map((x, i) => compare(x, b[i]!)).sort((x, y) => x - y);
  return { median: median(sorted), min: sorted[0]!, max: sorted.at(-1)!, rounds: sorted.length };
}

/**
 * How much more server CPU per response (µs) `variant` spent than `twin`, paired by round as
 * `pairedRatio` pairs throughputs. Undefined when either side has no per-round CPU.
 */
export function pairedCpuDifference(variant: LoadResult, twin: LoadResult): Paired | undefined {
  const a = variant.roundServerCpuPerRequest;
  return paired(a, twin.roundServerCpuPerRequest, (x, y) => (x - y) * 1000);
}

/**
 * Throughput ratio of `variant` to `twin` paired by round, then the median over rounds: drift
 * over a run moves both sides of a pair alike, where the ratio of whole-run totals lets it
 * land on whichever variant it hit. Falls back to the totals when the rounds are not known.
 */
export function pairedRatio(variant: LoadResult, twin: LoadResult): PairedRatio {
  const whole = variant.throughput / twin.throughput;
  const rounds = paired(variant.roundThroughputs, twin.roundThroughputs, (x, y) => x / y);
  return { ...(rounds ?? { median: whole, min: whole, max: whole, rounds: 1 }), whole };
}
