import { Rng } from './random.ts';

/** How big a run is. Everything else (what happens when) comes from the seed. */
export interface ChaosProfile {
  name: string;
  /** Checkout intents in total, browser ones included. */
  intents: number;
  /** Of those, driven through a real browser page. */
  browserIntents: number;
  /** How long the fault phase lasts; intents start spread over it. */
  durationMs: number;
  /** Nemesis events during the fault phase (each kind fires at least once if there is room). */
  nemesisEvents: number;
  /** The fault kinds the nemesis draws from (`SYSTEM_FAULT_KINDS`, failover and armed ones). */
  faults: readonly string[];
  /** Worker processes (several, so leases are taken over). */
  workers: number;
  /** Browser pages open at once (HTTP intents have no cap: each starts at its planned time). */
  browserConcurrency: number;
  /** After heal: how long unreached customers may still start while browser floors are short. */
  floorBoundMs?: number;
  /** After heal: how long the system gets to converge before it counts as stuck. */
  convergeTimeoutMs: number;
  /** Configuration that shortens the windows so expiry races happen within one run. */
  env: Record<string, string>;
  /** Shares of HTTP checkouts captured manually, refunded, meeting 3-D Secure; money faults. */
  moneyFlows: {
    manualShare: number;
    refundShare: number;
    faults: number;
    threeDSecureShare?: number;
    /** The share of operator flows whose operators are rude (`RudePlan`; absent: none). */
    rudeShare?: number;
  };
  /** The work a run must show, or it fails (dropped when the command line resizes the run). */
  floors?: Partial<CoverageFloors>;
  /** The app database's replication mode, which the nemesis fails over (absent: one server). */
  replication?: string;
}

/**
 * The least work a run must show to prove anything: a run whose clients crashed, or whose
 * faults met no checkout, passes the checker vacuously.
 */
export interface CoverageFloors {
  /** Intents whose key has a payment in the app. */
  intentsWithPayment: number;
  /** Browser customers whose page sent a checkout (a customer let in who did nothing is not one). */
  browserStarted: number;
  /** Browser customers whose checkout made a payment. */
  browserWithPayment: number;
  /** Client requests answered ok (status reads not counted). */
  requestsOk: number;
  killsInAmbiguityWindow: number;
  /** Lost responses whose request committed. */
  lostResponsesCommitted: number;
  leaseTakeovers: number;
  /** Late duplicates sent after the checkout key's retention. */
  expiriesCrossed: number;
  /** Payments the operator captured, and refunds the processor took. */
  captures: number;
  refunds: number;
  /** 3-D Secure challenges a shopper answered or left. */
  threeDSecure: number;
  /** Charges in the processor's ledger (always at least 1 unless the profile sets 0). */
  charges: number;
}

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
type TestPaymentMethod =
  | 'pm_card_visa'
  | 'pm_card_chargeDeclined'
  | 'pm_card_chargeDeclinedInsufficientFunds';

/** Stripe's test card that always asks for 3-D Secure, then charges like `pm_card_visa`. */
const THREE_D_SECURE_CARD = 'pm_card_threeDSecure2Required';

/** How a 3-D Secure shopper answers the challenge (`leave`: the reconciler cancels later). */
interface ChallengePlan {
  answer: 'complete' | 'fail' | 'leave';
  /** The redirect back is lost after the answer: the shopper asks the return page again. */
  loseRedirect: boolean;
}

/** The PaymentMethod a customer pays with: the 3-D Secure card when it meets a challenge. */
export const paymentMethodOf = (plan: Pick<IntentPlan, 'paymentMethod' | 'challenge'>) =>
  plan.challenge ? THREE_D_SECURE_CARD : plan.paymentMethod;

/**
 * What a checkout does after paying: `charge` at once, or authorise and leave it to the
 * operator, who captures (all or a part), voids, or (`expire`) captures too late.
 */
type Flow = 'charge' | 'capture' | 'void' | 'expire';

/** The ends of authorisations, in turn: most are captured. */
const MANUAL_FLOWS: readonly Flow[] = ['capture', 'void', 'capture', 'expire', 'capture'];

/** One operator request on a payment (a capture, a void, a refund) and how it is sent. */
interface OperatorRequestPlan {
  /** The request's own Idempotency-Key. */
  key: string;
  /** Sent this many times at once: 2 is a double-click (one key, two requests). */
  submits: 1 | 2;
  /** The first answer is dropped after the server ran it; the client retries with the key. */
  loseFirstResponse: boolean;
  /** Minor units; absent: all there is (all that was authorised, all that is left). */
  amount?: number;
}

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
  flow: Flow;
  /** A 3-D Secure shopper: pays with the challenge card instead of `paymentMethod`. */
  challenge?: ChallengePlan;
  /** Manual flows: the operator's capture or void, this long after the payment is authorised. */
  operatorAction?: OperatorRequestPlan & { afterMs: number };
  /** Refunds sent one after another: parts, the rest, now and then more than is left. */
  refunds: OperatorRequestPlan[];
  /** How the merchant's operators stop being polite on this payment (absent: they behave). */
  rude?: RudePlan;
}

/** Operators who race, send everything at once, reuse keys, or act signed out. */
interface RudePlan {
  /** A second operator acts on the payment at once under its own key: one of the two may act. */
  rival?: OperatorRequestPlan & { f: 'capture' | 'void' };
  /** The refunds are sent all at once, each under its own key for all that is left. */
  refundsAtOnce: boolean;
  /** The first refund goes out over tRPC, REST and GraphQL at once: all name one refund. */
  refundAcrossTransports: boolean;
  /** Once the capture is accepted, its key is sent for a refund: 422, nothing refunded. */
  captureKeyForRefund: boolean;
  /** The first action is sent first from a signed-out session (401, nothing done), then again. */
  revokedSession: boolean;
}

/** One fault the nemesis injects. */
export interface NemesisPlan {
  id: string;
  kind: string;
  atMs: number;
  /** How long a killed process stays down or a paused worker stopped (pauses: past the lease). */
  downMs: number;
  /** Process faults: which worker; processor faults: which tenant's account. */
  target: string;
  /** Processor faults: how many requests / deliveries it hits. */
  count: number;
  /** `delay` / `slow_webhook`: how long; `not_found`: how long the charged intent stays unreadable. */
  delayMs: number;
  /** `pg_terminate_storm`: how many rounds of pg_terminate_backend. */
  rounds: number;
  /** Request faults: the call they hit (absent: `payment_intents.confirm`, the charge). */
  operation?: MoneyOperation;
}

/** The processor calls of the operator's money actions a request fault may aim at. */
type MoneyOperation = 'payment_intents.capture' | 'refunds.create';

/** Request faults that an operator's capture or refund may meet (the charge's own kinds). */
const MONEY_FAULT_KINDS = [
  'fail_before_charge',
  'fail_after_charge',
  'charge_then_drop',
  'delay',
] as const;

/** The target's shortened windows in effect: the schedule sizes pauses and delays from them. */
export interface PlanTimings {
  /** Names of the worker processes the nemesis may kill or pause. */
  workerNames: readonly string[];
  leaseMs: number;
  processorTimeoutMs: number;
  /** How long an unsettled payment waits (with no live job) before the reconciler looks. */
  reconcileAfterMs: number;
  /** How long until the processor has forgotten an idempotency key (absent: never). */
  processorKeyForgetMs?: number;
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

/** The whole run as a pure function of the seed: same seed, profile and catalogue, same plan. */
export function planRun(
  seed: number,
  profile: ChaosProfile,
  catalogues: readonly TenantCatalogue[],
  options: PlanTimings,
): RunPlan {
  const root = new Rng(seed);
  const intentRng = root.fork('intents');
  const nemesisRng = root.fork('nemesis');
  const intents = planIntents(seed, profile, catalogues, intentRng);
  shareKeysAcrossTenants(intents, profile, intentRng);
  intents.sort((a, b) => a.startAtMs - b.startAtMs);
  const nemesis = planNemesis(profile, catalogues, options, nemesisRng);
  guaranteeLongPause(nemesis, profile, options.processorKeyForgetMs);
  nemesis.push(...moneyFaults(root.fork('money-nemesis'), profile, catalogues, options));
  nemesis.sort((a, b) => a.atMs - b.atMs);
  return { seed, intents, nemesis };
}

/** The customers: transports, carts, cards, retries, money flows, challenges and rude operators. */
function planIntents(
  seed: number,
  profile: ChaosProfile,
  catalogues: readonly TenantCatalogue[],
  intentRng: Rng,
): IntentPlan[] {
  const transports: Transport[] = [];
  for (let i = 0; i < profile.intents; i++) {
    transports.push(
      i < profile.browserIntents ? 'browser' : intentRng.chance(0.5) ? 'rest' : 'trpc',
    );
  }
  // Browser intents interleaved with HTTP ones, not all first.
  intentRng.shuffle(transports);

  // Authorisations take their ends in turn, so every run has each of them.
  let manualSoFar = 0;
  const nextManualFlow = (): Flow => MANUAL_FLOWS[manualSoFar++ % MANUAL_FLOWS.length]!;
  const intents: IntentPlan[] = transports.map((transport, index) => {
    const rng = intentRng.fork(`intent-${index}`);
    const tenant = rng.pick(catalogues);
    const lines = randomCart(rng, tenant);
    // The other cart is this one with one more of each line (see the HTTP client).
    const cost = (more: number) =>
      lines.reduce((sum, l) => sum + priceOf(tenant, l.productId) * (l.quantity + more), 0);
    const amount = cost(0);
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
      amount,
      reuseAmount: cost(1),
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
      // Drawn from a fork of its own: the draws above stay what they were for a seed.
      ...moneyFlowOf(rng.fork('money'), profile, {
        key: `chaos-${seed}-${index + 1}`,
        http: transport !== 'browser',
        charging: paymentMethod === 'pm_card_visa',
        amount,
        nextManualFlow,
      }),
    };
  });
  // 3-D Secure from a fork of its own too: which card charges changes, no other draw does.
  for (const [index, intent] of intents.entries()) {
    const challenge = challengeOf(intentRng.fork(`three-d-secure-${index}`), profile, intent);
    if (challenge) intent.challenge = challenge;
  }
  // Rude operators from forks of their own too: no other draw changes.
  for (const [index, intent] of intents.entries()) {
    const rude = rudeOf(intentRng.fork(`rude-${index}`), profile, intent);
    if (rude) intent.rude = rude;
  }
  return intents;
}

/** Two merchants' clients may pick the same key (an order number): keys are scoped by tenant. */
function shareKeysAcrossTenants(intents: IntentPlan[], profile: ChaosProfile, intentRng: Rng) {
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
}

/** The faults of the nemesis, spread over the fault phase (pauses weighted up). */
function planNemesis(
  profile: ChaosProfile,
  catalogues: readonly TenantCatalogue[],
  options: PlanTimings,
  nemesisRng: Rng,
): NemesisPlan[] {
  const kinds: string[] = [...profile.faults];
  // A stall inside a job is the rarest interleaving to reach by chance (it must land between
  // a claim and the processor call): pauses are drawn three times as often as other faults.
  const pool: string[] = profile.faults.includes('pause_worker')
    ? [...profile.faults, 'pause_worker', 'pause_worker']
    : [...profile.faults];
  while (kinds.length < profile.nemesisEvents) kinds.push(nemesisRng.pick(pool));
  kinds.length = Math.min(kinds.length, profile.nemesisEvents);
  nemesisRng.shuffle(kinds);
  return kinds.map((kind, index) => {
    const rng = nemesisRng.fork(`event-${index}`);
    const isWorkerFault = kind === 'kill_worker' || kind === 'pause_worker';
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
}

/** One pause outlasts the processor's key retention, the race lease fencing closes. */
function guaranteeLongPause(
  nemesis: NemesisPlan[],
  profile: ChaosProfile,
  processorKeyForgetMs: number | undefined,
): void {
  if (!processorKeyForgetMs) return;
  const pauses = nemesis.filter((n) => n.kind === 'pause_worker');
  if (pauses.some((p) => p.downMs > processorKeyForgetMs)) return;
  const fits = pauses.find((p) => p.atMs + p.downMs + processorKeyForgetMs <= profile.durationMs);
  if (fits) fits.downMs += processorKeyForgetMs;
}

/** An HTTP customer's money flow (declined cards and browser customers only charge). */
function moneyFlowOf(
  rng: Rng,
  profile: ChaosProfile,
  intent: {
    key: string;
    http: boolean;
    charging: boolean;
    amount: number;
    nextManualFlow: () => Flow;
  },
): Pick<IntentPlan, 'flow' | 'operatorAction' | 'refunds'> {
  if (!intent.http || !intent.charging) return { flow: 'charge', refunds: [] };
  const request = (suffix: string, amount?: number): OperatorRequestPlan => ({
    key: `${intent.key}-${suffix}-${rng.token(6)}`,
    submits: rng.chance(0.3) ? 2 : 1,
    loseFirstResponse: rng.chance(0.3),
    ...(amount === undefined ? {} : { amount }),
  });
  const roll = rng.next();
  const manual = roll < profile.moneyFlows.manualShare;
  const flow: Flow = manual ? intent.nextManualFlow() : 'charge';
  const captured =
    flow === 'capture' && rng.chance(0.4)
      ? Math.max(1, Math.floor((intent.amount * rng.int(50, 90)) / 100))
      : undefined;
  const window = Number(profile.env.PROCESSOR_AUTHORIZATION_WINDOW_MS ?? 0);
  const operatorAction = manual
    ? {
        ...request(flow === 'void' ? 'void' : 'capture', captured),
        afterMs: flow === 'expire' ? window + rng.int(2_000, 5_000) : rng.int(0, 2_000),
      }
    : undefined;
  const received =
    flow === 'charge' ? intent.amount : flow === 'capture' ? (captured ?? intent.amount) : 0;
  const refunds: OperatorRequestPlan[] = [];
  if (received > 0 && rng.chance(profile.moneyFlows.refundShare)) {
    const count = rng.int(1, 3);
    for (let i = 0; i < count; i++) {
      const last = i === count - 1;
      // Parts of a fifth to a third; the last one the rest, or now and then more than is left.
      const amount = !last
        ? Math.max(1, Math.floor((received * rng.int(20, 33)) / 100))
        : rng.chance(0.2)
          ? received + 1
          : rng.chance(0.5)
            ? undefined
            : Math.max(1, Math.floor((received * rng.int(10, 30)) / 100));
      refunds.push(request(`refund${i + 1}`, amount));
    }
  }
  return { flow, ...(operatorAction ? { operatorAction } : {}), refunds };
}

/** A share of the automatic card checkouts (`pm_card_visa`, flow `charge`) meet 3-D Secure. */
function challengeOf(
  rng: Rng,
  profile: ChaosProfile,
  intent: Pick<IntentPlan, 'paymentMethod' | 'flow'>,
): ChallengePlan | undefined {
  const share = profile.moneyFlows.threeDSecureShare ?? 0;
  if (intent.paymentMethod !== 'pm_card_visa' || intent.flow !== 'charge') return undefined;
  if (!rng.chance(share)) return undefined;
  const roll = rng.next();
  const answer = roll < 0.5 ? 'complete' : roll < 0.75 ? 'fail' : 'leave';
  return { answer, loseRedirect: answer !== 'leave' && rng.chance(0.35) };
}

/** A share of the operators' flows turn rude, where the flow has the request each needs. */
function rudeOf(
  rng: Rng,
  profile: ChaosProfile,
  intent: Pick<IntentPlan, 'key' | 'flow' | 'operatorAction' | 'refunds' | 'amount'>,
): RudePlan | undefined {
  const share = profile.moneyFlows.rudeShare ?? 0;
  if (!intent.operatorAction && intent.refunds.length === 0) return undefined;
  if (!rng.chance(share)) return undefined;
  const racing = intent.flow === 'capture' || intent.flow === 'void';
  const rivalF = intent.flow === 'void' || rng.chance(0.5) ? 'capture' : 'void';
  const rival =
    racing && rng.chance(0.6)
      ? ({
          f: rivalF,
          key: `${intent.key}-rival-${rng.token(6)}`,
          submits: 1 as const,
          loseFirstResponse: false,
          // A rival capture asks for less than all: another body, another key.
          ...(rivalF === 'capture' ? { amount: Math.max(1, Math.floor(intent.amount / 2)) } : {}),
        } satisfies RudePlan['rival'])
      : undefined;
  return {
    ...(rival ? { rival } : {}),
    refundsAtOnce: intent.refunds.length > 1 && rng.chance(0.6),
    refundAcrossTransports: intent.refunds.length > 0 && rng.chance(0.5),
    captureKeyForRefund: intent.flow === 'capture' && rng.chance(0.5),
    revokedSession: rng.chance(0.3),
  };
}

/** Processor request faults aimed at the operator's captures and refunds, not the charge. */
function moneyFaults(
  rng: Rng,
  profile: ChaosProfile,
  catalogues: readonly TenantCatalogue[],
  options: { processorTimeoutMs: number },
): NemesisPlan[] {
  const kinds = MONEY_FAULT_KINDS.filter((k) => profile.faults.includes(k));
  if (kinds.length === 0) return [];
  return Array.from({ length: profile.moneyFlows.faults }, (_, index) => {
    const kind = rng.pick(kinds);
    return {
      id: `m${String(index + 1).padStart(3, '0')}`,
      kind,
      atMs: Math.floor(
        ((index + rng.next()) / profile.moneyFlows.faults) * profile.durationMs * 0.7,
      ),
      downMs: 0,
      target: rng.pick(catalogues).processorAccountId,
      // Two or three requests: captures are few and late in a run, so a fault waits for them.
      count: rng.int(2, 3),
      delayMs: kind === 'delay' ? options.processorTimeoutMs + rng.int(500, 3_000) : 0,
      rounds: 0,
      // The refund one time in three, the capture the other two (captures are fewer), so both
      // paths meet a fault in every run.
      operation: index % 3 === 0 ? 'refunds.create' : 'payment_intents.capture',
    };
  });
}
