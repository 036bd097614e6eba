import type { FaultKind } from './fault-kinds.ts';
import type { ChaosProfile } from './profiles.ts';
import { Rng } from './random.ts';

/** What a client may buy from: one merchant, its credentials and its price list. */
export interface TenantCatalogue {
  tenantId: string;
  /** Bearer key for REST and tRPC over HTTP. */
  apiKey: string;
  /** Where the processor books this tenant's money (faults are armed per account). */
  processorAccountId: string;
  products: { id: string; unitAmount: number }[];
}

type Transport = 'rest' | 'trpc' | 'browser';

/** Stripe's test PaymentMethods: one succeeds, two are declined. */
const TEST_PAYMENT_METHODS = [
  'pm_card_visa',
  'pm_card_chargeDeclined',
  'pm_card_chargeDeclinedInsufficientFunds',
] as const;
export type TestPaymentMethod = (typeof TEST_PAYMENT_METHODS)[number];

/** The card numbers the checkout page lists for the same PaymentMethods. */
export const CARD_NUMBER_OF: Record<TestPaymentMethod, string> = {
  pm_card_visa: '4242424242424242',
  pm_card_chargeDeclined: '4000000000000002',
  pm_card_chargeDeclinedInsufficientFunds: '4000000000009995',
};

/** One customer's intent to pay for one cart, and how that customer behaves. */
export interface IntentPlan {
  id: string;
  tenantId: string;
  transport: Transport;
  /** The intent's Idempotency-Key (the browser makes its own; this one is then unused). */
  key: string;
  lines: { productId: string; quantity: number }[];
  /** What the cart costs at the catalogue's prices. */
  amount: number;
  /** What the other cart sent with the same key costs (`reuseKeyWithOtherCart`). */
  reuseAmount: number;
  paymentMethod: TestPaymentMethod;
  /** Offset from the start of the fault phase. */
  startAtMs: number;
  /** The first attempt is sent this many times at once (double / triple submit). */
  submits: 1 | 2 | 3;
  /** The first answer is lost: the server processed the request, the client never hears. */
  loseFirstResponse: boolean;
  /** The client's own timeout per request. */
  clientTimeoutMs: number;
  /** After a definite answer, send the same request again this much later. */
  lateDuplicateAfterMs: number | null;
  /** Also send the same key with another cart (must be refused, never charged). */
  reuseKeyWithOtherCart: boolean;
  /** The customer gives up after this many attempts without a definite answer. */
  giveUpAfterAttempts: number;
  /** Browser only: reload the page while the payment is in flight. */
  reloadMidPayment: boolean;
}

/** One fault the nemesis injects. */
export interface NemesisPlan {
  id: string;
  kind: FaultKind;
  atMs: number;
  /**
   * How long a killed process stays down, or a paused worker stays stopped. A pause lasts
   * past the lease, and two thirds of them also past the processor's key retention (a worker
   * stopped right after claiming a job wakes up to a processor that forgot its keys).
   */
  downMs: number;
  /** Process faults: which worker; processor faults: which tenant's account. */
  target: string;
  /** Processor faults: how many requests / deliveries it hits. */
  count: number;
  /** `delay` / `slow_webhook`: how long; `not_found`: how long the charged intent stays unreadable. */
  delayMs: number;
  /** `pg_terminate_storm`: how many rounds of pg_terminate_backend. */
  rounds: number;
}

export interface RunPlan {
  seed: number;
  intents: IntentPlan[];
  nemesis: NemesisPlan[];
}

const priceOf = (tenant: TenantCatalogue, productId: string) =>
  tenant.products.find((p) => p.id === productId)!.unitAmount;

function randomCart(rng: Rng, tenant: TenantCatalogue): IntentPlan['lines'] {
  const count = rng.int(1, Math.min(3, tenant.products.length));
  const chosen = new Set<string>();
  while (chosen.size < count) chosen.add(rng.pick(tenant.products).id);
  return [...chosen].map((productId) => ({ productId, quantity: rng.int(1, 3) }));
}

/**
 * The whole run as a pure function of the seed: same seed, same profile, same catalogue,
 * same plan. Intents start spread over the first 85% of the fault phase (browser ones over
 * the first 60%); each fault kind the profile names is scheduled at least once (if there is
 * room), the rest drawn at random (pauses weighted up).
 *
 * @example
 * const plan = planRun(42, PROFILES.ci!, catalogues, {
 *   workerNames: ['worker-1', 'worker-2'], leaseMs: 3_000, processorTimeoutMs: 4_000, reconcileAfterMs: 4_000,
 * });
 */
export function planRun(
  seed: number,
  profile: ChaosProfile,
  catalogues: readonly TenantCatalogue[],
  options: {
    workerNames: readonly string[];
    leaseMs: number;
    processorTimeoutMs: number;
    /** How long an unsettled payment waits before the reconciler looks at it. */
    reconcileAfterMs: number;
    /** How long until the processor has forgotten an idempotency key (retention + reaping). */
    processorKeyForgetMs?: number;
  },
): RunPlan {
  const root = new Rng(seed);
  const intentRng = root.fork('intents');
  const nemesisRng = root.fork('nemesis');

  const transports: Transport[] = [];
  for (let i = 0; i < profile.intents; i++) {
    transports.push(
      i < profile.browserIntents ? 'browser' : intentRng.chance(0.5) ? 'rest' : 'trpc',
    );
  }
  // Browser intents interleaved with HTTP ones, not all first.
  for (let i = transports.length - 1; i > 0; i--) {
    const j = intentRng.int(0, i);
    [transports[i], transports[j]] = [transports[j]!, transports[i]!];
  }

  const intents: IntentPlan[] = transports.map((transport, index) => {
    const rng = intentRng.fork(`intent-${index}`);
    const tenant = rng.pick(catalogues);
    const lines = randomCart(rng, tenant);
    const roll = rng.next();
    const paymentMethod: TestPaymentMethod =
      roll < 0.8
        ? 'pm_card_visa'
        : roll < 0.9
          ? 'pm_card_chargeDeclined'
          : 'pm_card_chargeDeclinedInsufficientFunds';
    return {
      id: `i${String(index + 1).padStart(4, '0')}`,
      tenantId: tenant.tenantId,
      transport,
      key: `chaos-${seed}-${index + 1}-${rng.token(8)}`,
      lines,
      amount: lines.reduce((sum, l) => sum + priceOf(tenant, l.productId) * l.quantity, 0),
      // The other cart is this one with one more of each line (see the HTTP client).
      reuseAmount: lines.reduce(
        (sum, l) => sum + priceOf(tenant, l.productId) * (l.quantity + 1),
        0,
      ),
      paymentMethod,
      // Browser customers take tens of seconds each (page loads, clicks, waiting for the
      // end): they start in the first 60% so that every one of them gets to pay.
      startAtMs: Math.floor(
        rng.next() * profile.durationMs * (transport === 'browser' ? 0.6 : 0.85),
      ),
      submits: rng.chance(0.25) ? (rng.chance(0.4) ? 3 : 2) : 1,
      loseFirstResponse: rng.chance(0.25),
      clientTimeoutMs: rng.pick([3_000, 5_000, 8_000]),
      lateDuplicateAfterMs: rng.chance(0.15) ? rng.int(2_000, 25_000) : null,
      reuseKeyWithOtherCart: transport !== 'browser' && rng.chance(0.08),
      // Most customers keep retrying until they get an answer (the heal guarantees one).
      giveUpAfterAttempts: rng.chance(0.1) ? 1 : 1_000,
      reloadMidPayment: transport === 'browser' && rng.chance(0.4),
    };
  });
  // Keys are the client's to choose, so two merchants' clients may pick the same one (an
  // order number, say). Keys are scoped by tenant: such pairs must never meet.
  const tenantsOfKey = new Map<string, Set<string>>(
    intents.map((i) => [i.key, new Set([i.tenantId])]),
  );
  for (let i = 1; i < intents.length; i++) {
    const intent = intents[i]!;
    const earlier = intents[intentRng.int(0, i - 1)]!;
    const holders = tenantsOfKey.get(earlier.key)!;
    if (
      intentRng.chance(0.2) &&
      intent.transport !== 'browser' &&
      earlier.transport !== 'browser' &&
      !holders.has(intent.tenantId)
    ) {
      intent.key = earlier.key;
      holders.add(intent.tenantId);
      // Soon after the other tenant's client, while its key record still lives (the key's
      // TTL is seconds in chaos runs): a lookup that ignored the tenant would find it.
      intent.startAtMs = Math.min(
        earlier.startAtMs + intentRng.int(300, 4_000),
        Math.floor(profile.durationMs * 0.85),
      );
    }
  }
  intents.sort((a, b) => a.startAtMs - b.startAtMs);

  const kinds: FaultKind[] = [...profile.faults];
  // A stall inside a job is the rarest interleaving to reach by chance (it must land between
  // a claim and the processor call): pauses are drawn three times as often as other faults.
  const pool: FaultKind[] = profile.faults.includes('pause_worker')
    ? [...profile.faults, 'pause_worker', 'pause_worker']
    : [...profile.faults];
  while (kinds.length < profile.nemesisEvents) kinds.push(nemesisRng.pick(pool));
  kinds.length = Math.min(kinds.length, profile.nemesisEvents);
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = nemesisRng.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  const nemesis: NemesisPlan[] = kinds.map((kind, index) => {
    const rng = nemesisRng.fork(`event-${index}`);
    const isWorkerFault = kind === 'kill_worker' || kind === 'pause_worker';
    // Evenly spread with jitter, so faults overlap with traffic from start to end.
    const atMs = Math.floor(((index + rng.next()) / kinds.length) * profile.durationMs * 0.9);
    const shortPause = options.leaseMs + rng.int(300, 2_000);
    const longPause = shortPause + (options.processorKeyForgetMs ?? 0);
    const pauseMs =
      options.processorKeyForgetMs && rng.chance(0.67) && atMs + longPause <= profile.durationMs
        ? longPause
        : shortPause;
    return {
      id: `n${String(index + 1).padStart(3, '0')}`,
      kind,
      atMs,
      downMs: kind === 'pause_worker' ? pauseMs : rng.int(200, 1_500),
      target: isWorkerFault
        ? rng.pick(options.workerNames)
        : rng.pick(catalogues).processorAccountId,
      count: kind === 'not_found' ? 1 : rng.int(1, 3),
      delayMs:
        kind === 'delay'
          ? options.processorTimeoutMs + rng.int(500, 3_000)
          : kind === 'not_found'
            ? // The intent stays unreadable past the job's retry (seconds late when the
              // workers are stalled) and the reconciler's first look (the reconcile-after
              // window plus a pass), so both read a 404.
              options.reconcileAfterMs + rng.int(15_000, 25_000)
            : rng.int(1_000, 4_000),
      rounds: rng.int(2, 5),
    };
  });
  nemesis.sort((a, b) => a.atMs - b.atMs);
  return { seed, intents, nemesis };
}
