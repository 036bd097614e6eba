import { randomBytes } from 'node:crypto';
import { checkConformance, type Preset, probeIetf } from './conformance.ts';
import { DEFAULT_FAULT_MIX, type FaultMix, startFaultProxy } from './fault-proxy.ts';
import type { LedgerReader } from './ledger.ts';
import { defaultBody, runLoad } from './load-clients.ts';
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
