import { attributeToRecreatedPayments, checkFailover } from './failover-checks.ts';
import { groupBy, tupleKey } from './group.ts';
import type { ClientEvent, HistoryEvent, LifecycleEvent } from './history.ts';
import { checkMoney, moneyBooks, sum } from './money-checks.ts';
import type { AppPayment, LedgerEntry, Snapshot } from './target.ts';
import type { Violation } from './violations.ts';

/** What the checker needs to know about an intent besides the history. */
export interface IntentFacts {
  id: string;
  tenantId: string;
  /** The cart's price: the amount a success must charge. */
  amount: number;
  /**
   * The price of another cart the client sent with the same key, if any. When that request
   * may have run first (its answer was ok or unknown), its cart is a legitimate payment.
   */
  reuseAmount?: number;
  /** The card is declined by the processor: a success is wrong. */
  declinedCard: boolean;
}

export type CheckResult = ReturnType<typeof checkHistory>;

export const TERMINAL = new Set([
  'succeeded',
  'declined',
  'failed',
  'captured',
  'voided',
  'canceled',
]);
/** The terminal states in which the processor holds the payment's one charge. */
const CHARGED = new Set(['succeeded', 'captured']);
/**
 * States the heal may leave a payment in: the terminal ones, and `authorized` (an
 * authorisation nobody captured waits for its operator; the ledger holds nothing for it).
 */
const SETTLED = new Set([...TERMINAL, 'authorized']);

/** What the processor should hold for a payment: its amount, or the part a capture took. */
const receivedOf = (p: AppPayment): number =>
  p.status === 'succeeded' ? p.amount : p.status === 'captured' ? (p.amountCaptured ?? 0) : 0;

/**
 * Decides from the history and both databases whether the run kept the promise, one check
 * family after another (the order of the findings); on a replicated database
 * `failover-checks.ts` adds its own, and a lost payment's charge counts for its re-creation.
 */
export function checkHistory(input: {
  intents: readonly IntentFacts[];
  events: readonly HistoryEvent[];
  snapshot: Snapshot;
  /** History time of the heal; with `startedAt` (epoch ms of time 0) for database timestamps. */
  healAt: number;
  startedAt: number;
}) {
  const snapshot = input.snapshot.failover
    ? attributeToRecreatedPayments(input.snapshot)
    : input.snapshot;
  const completions = input.events.filter(
    (e): e is ClientEvent => 'op' in e && e.type !== 'invoke',
  );
  const index = indexSnapshot(snapshot, completions);
  const byIntent = groupBy(completions, (e) => e.intent);
  const failover = snapshot.failover
    ? checkFailover({
        completions,
        snapshot: { ...snapshot, failover: snapshot.failover },
        intents: input.intents,
        netCharges: index.netCharges,
      })
    : undefined;
  const violations: Violation[] = [
    ...checkOnePaymentPerKey(index),
    ...checkEachPayment(index),
    ...checkChargesHavePayments(index),
    ...input.intents.flatMap((intent) => checkIntent(intent, byIntent.get(intent.id) ?? [], index)),
    // Money: refunds and captures against both databases, conserved per payment and tenant.
    ...checkMoney({
      snapshot,
      completions,
      receivedOf,
      intentOf: index.intentOf,
      books: index.books,
    }),
    ...(failover?.violations ?? []),
    ...checkNoProcessDied(input.events),
  ];
  return {
    violations,
    convergence: convergenceAfter(snapshot, input.startedAt + input.healAt),
    ...(failover ? { failover: failover.findings } : {}),
  };
}

/** The snapshot's payments and ledger looked up by (tenant, key) and (tenant, payment). */
function indexSnapshot(snapshot: Snapshot, completions: readonly ClientEvent[]) {
  const paymentsByKey = groupBy(snapshot.payments, (p) => tupleKey(p.tenantId, p.idempotencyKey));
  const paymentsById = new Map(snapshot.payments.map((p) => [tupleKey(p.tenantId, p.id), p]));
  const books = moneyBooks(snapshot);
  // A charge is netted out only by money that came back in full: the payment's refunds
  // (signed: a failed refund's return is negative) cancel whole charges, oldest first, and a
  // partial refund cancels none. A payment the app refunded itself has only the app's refunds
  // to expect: money back beyond them is a refund sent twice (`checkPaymentMoney`).
  const netCharges = (p: AppPayment): LedgerEntry[] => {
    const id = tupleKey(p.tenantId, p.id);
    const own = books.chargesOf.get(id) ?? [];
    if (books.appRefundsOf.has(id)) return own;
    // The app's own refunds are not a charge undone.
    let refunded = sum(books.refundsOf.get(id) ?? []) - (p.amountRefunded ?? 0);
    const left = [...own];
    while (left.length > 0 && refunded >= left[0]!.amount) refunded -= left.shift()!.amount;
    return left;
  };
  const intentOf = (p: AppPayment) => intentOfKey(completions, p.tenantId, p.idempotencyKey);
  return { snapshot, completions, books, paymentsByKey, paymentsById, netCharges, intentOf };
}

type SnapshotIndex = ReturnType<typeof indexSnapshot>;

function checkOnePaymentPerKey({ paymentsByKey, completions }: SnapshotIndex): Violation[] {
  return [...paymentsByKey]
    .filter(([, payments]) => payments.length > 1)
    .map(([, payments]) => {
      const { tenantId, idempotencyKey } = payments[0]!;
      return {
        kind: 'duplicate_payment',
        intent: intentOfKey(completions, tenantId, idempotencyKey),
        tenantId,
        detail: `${payments.length} payments for key ${idempotencyKey}: ${payments.map((p) => `${p.id} (${p.status}, ${p.amount})`).join(', ')}`,
      };
    });
}

/** Per payment: at most one charge, of its amount; the state agrees with the ledger. */
function checkEachPayment({ snapshot, netCharges, intentOf }: SnapshotIndex): Violation[] {
  const violations: Violation[] = [];
  for (const payment of snapshot.payments) {
    const charges = netCharges(payment);
    const where = { intent: intentOf(payment), tenantId: payment.tenantId, paymentId: payment.id };
    const found = (kind: Violation['kind'], detail: string) =>
      violations.push({ ...where, kind, detail });
    if (charges.length > 1) {
      // An authorisation's charge is its capture: two are the same payment captured twice.
      const manual = payment.captureMethod === 'manual';
      found(
        manual ? 'double_capture' : 'double_charge',
        `${charges.length} ${manual ? 'captures' : 'charges'} at the processor: ${charges.map((c) => `${c.paymentIntentId} ${c.amount}`).join(', ')}`,
      );
    }
    const chargeAmount = payment.status === 'captured' ? receivedOf(payment) : payment.amount;
    for (const charge of charges) {
      if (charge.amount !== chargeAmount) {
        found('wrong_amount', `charged ${charge.amount}, the payment is for ${chargeAmount}`);
      }
    }
    if (SETTLED.has(payment.status)) {
      const expected = CHARGED.has(payment.status) ? 1 : 0;
      if (charges.length !== expected && !(charges.length > 1 && expected === 1)) {
        found(
          'state_disagrees_with_ledger',
          `payment ${payment.status}, the ledger holds ${charges.length} charge(s)`,
        );
      }
    } else {
      found(
        'not_terminal',
        `payment still ${payment.status} after the heal (${charges.length} charge(s) in the ledger)`,
      );
    }
  }
  return violations;
}

/** Every charge belongs to a payment the app knows. */
function checkChargesHavePayments({ snapshot, paymentsById }: SnapshotIndex): Violation[] {
  return snapshot.ledger
    .filter((l) => l.kind === 'charge' && !paymentsById.has(tupleKey(l.tenantId, l.paymentId)))
    .map((charge) => ({
      kind: 'charge_without_payment',
      tenantId: charge.tenantId ?? undefined,
      paymentId: charge.paymentId ?? undefined,
      detail: `ledger charge ${charge.paymentIntentId} of ${charge.amount} on ${charge.accountId} names no payment of the app`,
    }));
}

/** Per intent, from what its client saw. */
function checkIntent(
  intent: IntentFacts,
  seen: readonly ClientEvent[],
  { snapshot, paymentsByKey, paymentsById, netCharges }: SnapshotIndex,
): Violation[] {
  const pays = seen.filter((e) => e.f === 'pay' || e.f === 'late');
  const keys = new Set(seen.map((e) => e.key).filter(Boolean));
  const payments = [...keys].flatMap((k) => paymentsByKey.get(tupleKey(intent.tenantId, k)) ?? []);
  const charges = payments.flatMap(netCharges);
  const okPays = pays.filter((e) => e.type === 'ok');
  const where = { intent: intent.id, tenantId: intent.tenantId };
  const violations: Violation[] = [];
  const found = (kind: Violation['kind'], detail: string) =>
    violations.push({ ...where, kind, detail });
  const foundOn = (paymentId: string | undefined, kind: Violation['kind'], detail: string) =>
    violations.push({ ...where, paymentId, kind, detail });

  if (okPays.length > 0 && payments.length === 0) {
    found(
      'missing_payment',
      `answered ok (${okPays[0]!.paymentId}) but the app holds no payment for its key`,
    );
  }
  // Every request that could create a payment, the other cart's included.
  const attempts = seen.filter((e) => e.f !== 'status');
  if (attempts.length > 0 && attempts.every((e) => e.type === 'fail') && charges.length > 0) {
    found(
      'charged_after_refusals',
      `every answer was a refusal, yet ${charges.length} charge(s) exist`,
    );
  }
  // 422 "key reused" is right only if another cart with this key may have run first.
  const reuseMayHaveRun = seen.some((e) => e.f === 'reuse' && e.type !== 'fail');
  const refusedAsReused = pays.filter((e) => e.type === 'fail' && e.status === 422);
  if (!reuseMayHaveRun && refusedAsReused.length > 0) {
    found(
      'wrongly_refused',
      `the client only ever sent one cart with its key, yet was refused ${refusedAsReused.length} time(s) with 422 (${refusedAsReused[0]!.error ?? ''}): did another tenant's key answer?`,
    );
  }
  // A payment a failover lost is counted there (`failover-checks.ts`), not as a second one.
  const okIds = new Set(
    okPays
      .map((e) => e.paymentId)
      .filter((id) => !snapshot.failover || paymentsById.has(tupleKey(intent.tenantId, id))),
  );
  if (okIds.size > 1) {
    found(
      'duplicate_payment',
      `one intent was answered with ${okIds.size} different payments: ${[...okIds].join(', ')}`,
    );
  }
  if (charges.length > 1 && payments.length > 1) {
    found(
      'double_charge',
      `${charges.length} charges across ${payments.length} payments of one intent`,
    );
  }
  const allowed = new Set([
    intent.amount,
    ...(reuseMayHaveRun && intent.reuseAmount ? [intent.reuseAmount] : []),
  ]);
  for (const p of payments) {
    if (!allowed.has(p.amount)) {
      foundOn(
        p.id,
        'wrong_amount',
        `payment of ${p.amount} for a cart of ${intent.amount} (a reused key took another cart?)`,
      );
    }
    if (intent.declinedCard && p.status === 'succeeded') {
      foundOn(p.id, 'declined_card_charged', 'a declined test card ended succeeded');
    }
  }
  const lastShown = [...seen]
    .reverse()
    .find((e) => e.type === 'ok' && e.state && TERMINAL.has(e.state));
  if (lastShown) {
    const paymentCharges = payments.filter((p) => p.id === lastShown.paymentId).flatMap(netCharges);
    const agrees = CHARGED.has(lastShown.state!)
      ? paymentCharges.length === 1
      : paymentCharges.length === 0;
    if (!agrees) {
      foundOn(
        lastShown.paymentId,
        'shown_disagrees_with_ledger',
        `the client was shown ${lastShown.state}; the ledger holds ${paymentCharges.length} charge(s) for ${lastShown.paymentId}`,
      );
    }
  }
  return violations;
}

function checkNoProcessDied(events: readonly HistoryEvent[]): Violation[] {
  return events
    .filter((e): e is LifecycleEvent => e.type === 'process' && e.event === 'exited')
    .map((exit) => ({
      kind: 'process_died',
      detail: `${exit.process} exited without the nemesis at ${exit.at} ms: ${exit.detail ?? ''}`,
    }));
}

/** Milliseconds from the heal to each payment's last change, for those changed after it. */
function convergenceAfter(snapshot: Snapshot, healEpoch: number) {
  const samples = snapshot.payments
    .map((p) => p.updatedAt - healEpoch)
    .filter((ms) => ms > 0)
    .sort((a, b) => a - b);
  return {
    p50: percentile(samples, 0.5),
    p99: percentile(samples, 0.99),
    max: samples.at(-1) ?? 0,
    samples: samples.length,
  };
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

function intentOfKey(events: readonly ClientEvent[], tenantId: string, key: string) {
  return events.find((e) => e.tenantId === tenantId && e.key === key)?.intent;
}
