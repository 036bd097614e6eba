import { attributeToRecreatedPayments, checkFailover } from './failover-checks.ts';
import type { ClientEvent, HistoryEvent, LifecycleEvent } from './history.ts';
import { checkMoney, groupBy } from './money-checks.ts';
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
 * Decides from the history and both databases whether the run kept the promise:
 * - per (tenant, key) at most one payment; per payment at most one charge, of its amount;
 * - a payment's cart was priced right (the amount charged is the intent's cart);
 * - every intent with an `ok` answer has a payment, terminal after the heal;
 * - an intent whose answers were all `fail` has no charge;
 * - what each client was last shown agrees with the ledger (succeeded = exactly one charge,
 *   declined/failed = none) and so does the payment's state (captured = one charge, of the
 *   captured amount; voided = none);
 * - money is conserved per tenant (charges - refunds = what the payments received - what the
 *   app refunded);
 * - no process exited except by the nemesis;
 * - a client that only ever sent one cart with its key is never refused as "key reused";
 * - on a replicated database (`failover-checks.ts`): no acknowledged commit lost in a
 *   synchronous mode (counted in async mode), no row resurrected, no checkout charged twice
 *   across a payment a failover lost and its re-creation; the lost payment's charge counts
 *   for the re-created one (same downstream key).
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
  const violations: Violation[] = [];
  const completions = input.events.filter(
    (e): e is ClientEvent => 'op' in e && e.type !== 'invoke',
  );
  const byIntent = groupBy(completions, (e) => e.intent);
  const paymentsByKey = groupBy(snapshot.payments, (p) => `${p.tenantId}\u0000${p.idempotencyKey}`);
  const paymentsById = new Map(snapshot.payments.map((p) => [`${p.tenantId}\u0000${p.id}`, p]));
  const chargesOf = groupBy(
    snapshot.ledger.filter((l) => l.kind === 'charge'),
    (l) => `${l.tenantId}\u0000${l.paymentId}`,
  );
  const refundsOf = groupBy(
    snapshot.ledger.filter((l) => l.kind === 'refund'),
    (l) => `${l.tenantId}\u0000${l.paymentId}`,
  );
  const appRefundsOf = groupBy(snapshot.refunds ?? [], (r) => `${r.tenantId}\u0000${r.paymentId}`);
  // A charge is netted out only by money that came back in full: the payment's refunds
  // (signed: a failed refund's return is negative) cancel whole charges, oldest first, and a
  // partial refund cancels none (the payment still holds its one charge). A payment the app
  // refunded itself has only the app's refunds to expect: money back beyond them is a
  // refund sent twice (`checkRefunds`), never a charge undone.
  const netCharges = (p: AppPayment): LedgerEntry[] => {
    const charges = chargesOf.get(`${p.tenantId}\u0000${p.id}`) ?? [];
    if (appRefundsOf.has(`${p.tenantId}\u0000${p.id}`)) return charges;
    let refunded = (refundsOf.get(`${p.tenantId}\u0000${p.id}`) ?? []).reduce(
      (sum, r) => sum + r.amount,
      0,
    );
    // The app's own refunds are not a charge undone.
    refunded -= p.amountRefunded ?? 0;
    const left = [...charges];
    while (left.length > 0 && refunded >= left[0]!.amount) refunded -= left.shift()!.amount;
    return left;
  };

  // Per (tenant, key): one payment.
  for (const [key, payments] of paymentsByKey) {
    if (payments.length > 1) {
      const [tenantId, idempotencyKey] = key.split('\u0000');
      violations.push({
        kind: 'duplicate_payment',
        intent: intentOfKey(completions, tenantId!, idempotencyKey!),
        tenantId,
        detail: `${payments.length} payments for key ${idempotencyKey}: ${payments.map((p) => `${p.id} (${p.status}, ${p.amount})`).join(', ')}`,
      });
    }
  }

  // Per payment: at most one charge, of its amount; the state agrees with the ledger.
  for (const payment of snapshot.payments) {
    const charges = netCharges(payment);
    const intent = intentOfKey(completions, payment.tenantId, payment.idempotencyKey);
    const where = { intent, tenantId: payment.tenantId, paymentId: payment.id };
    if (charges.length > 1) {
      // An authorisation's charge is its capture: two are the same payment captured twice.
      const manual = payment.captureMethod === 'manual';
      violations.push({
        ...where,
        kind: manual ? 'double_capture' : 'double_charge',
        detail: `${charges.length} ${manual ? 'captures' : 'charges'} at the processor: ${charges.map((c) => `${c.paymentIntentId} ${c.amount}`).join(', ')}`,
      });
    }
    const chargeAmount = payment.status === 'captured' ? receivedOf(payment) : payment.amount;
    for (const charge of charges) {
      if (charge.amount !== chargeAmount) {
        violations.push({
          ...where,
          kind: 'wrong_amount',
          detail: `charged ${charge.amount}, the payment is for ${chargeAmount}`,
        });
      }
    }
    if (SETTLED.has(payment.status)) {
      const expected = CHARGED.has(payment.status) ? 1 : 0;
      if (charges.length !== expected && !(charges.length > 1 && expected === 1)) {
        violations.push({
          ...where,
          kind: 'state_disagrees_with_ledger',
          detail: `payment ${payment.status}, the ledger holds ${charges.length} charge(s)`,
        });
      }
    } else {
      violations.push({
        ...where,
        kind: 'not_terminal',
        detail: `payment still ${payment.status} after the heal (${charges.length} charge(s) in the ledger)`,
      });
    }
  }

  // Every charge belongs to a payment the app knows.
  for (const charge of snapshot.ledger.filter((l) => l.kind === 'charge')) {
    if (!paymentsById.has(`${charge.tenantId}\u0000${charge.paymentId}`)) {
      violations.push({
        kind: 'charge_without_payment',
        tenantId: charge.tenantId ?? undefined,
        paymentId: charge.paymentId ?? undefined,
        detail: `ledger charge ${charge.paymentIntentId} of ${charge.amount} on ${charge.accountId} names no payment of the app`,
      });
    }
  }

  // Per intent, from what its client saw.
  for (const intent of input.intents) {
    const seen = byIntent.get(intent.id) ?? [];
    const pays = seen.filter((e) => e.f === 'pay' || e.f === 'late');
    const keys = new Set(seen.map((e) => e.key).filter(Boolean));
    const payments = [...keys].flatMap(
      (k) => paymentsByKey.get(`${intent.tenantId}\u0000${k}`) ?? [],
    );
    const charges = payments.flatMap(netCharges);
    const okPays = pays.filter((e) => e.type === 'ok');
    const where = { intent: intent.id, tenantId: intent.tenantId };

    if (okPays.length > 0 && payments.length === 0) {
      violations.push({
        ...where,
        kind: 'missing_payment',
        detail: `answered ok (${okPays[0]!.paymentId}) but the app holds no payment for its key`,
      });
    }
    // Every request that could create a payment, the other cart's included.
    const attempts = seen.filter((e) => e.f !== 'status');
    if (attempts.length > 0 && attempts.every((e) => e.type === 'fail') && charges.length > 0) {
      violations.push({
        ...where,
        kind: 'charged_after_refusals',
        detail: `every answer was a refusal, yet ${charges.length} charge(s) exist`,
      });
    }
    // 422 "key reused" is right only if another cart with this key may have run first.
    const reuseRan = seen.some((e) => e.f === 'reuse' && e.type !== 'fail');
    const refusedAsReused = pays.filter((e) => e.type === 'fail' && e.status === 422);
    if (!reuseRan && refusedAsReused.length > 0) {
      violations.push({
        ...where,
        kind: 'wrongly_refused',
        detail: `the client only ever sent one cart with its key, yet was refused ${refusedAsReused.length} time(s) with 422 (${refusedAsReused[0]!.error ?? ''}): did another tenant's key answer?`,
      });
    }
    // A payment a failover lost is counted there (`failover-checks.ts`), not as a second one.
    const okIds = new Set(
      okPays
        .map((e) => e.paymentId)
        .filter((id) => !snapshot.failover || paymentsById.has(`${intent.tenantId}\u0000${id}`)),
    );
    if (okIds.size > 1) {
      violations.push({
        ...where,
        kind: 'duplicate_payment',
        detail: `one intent was answered with ${okIds.size} different payments: ${[...okIds].join(', ')}`,
      });
    }
    if (charges.length > 1 && payments.length > 1) {
      violations.push({
        ...where,
        kind: 'double_charge',
        detail: `${charges.length} charges across ${payments.length} payments of one intent`,
      });
    }
    const reuseMayHaveRun = seen.some((e) => e.f === 'reuse' && e.type !== 'fail');
    const allowed = new Set([
      intent.amount,
      ...(reuseMayHaveRun && intent.reuseAmount ? [intent.reuseAmount] : []),
    ]);
    for (const p of payments) {
      if (!allowed.has(p.amount)) {
        violations.push({
          ...where,
          paymentId: p.id,
          kind: 'wrong_amount',
          detail: `payment of ${p.amount} for a cart of ${intent.amount} (a reused key took another cart?)`,
        });
      }
      if (intent.declinedCard && p.status === 'succeeded') {
        violations.push({
          ...where,
          paymentId: p.id,
          kind: 'declined_card_charged',
          detail: 'a declined test card ended succeeded',
        });
      }
    }
    const lastShown = [...seen]
      .reverse()
      .find((e) => e.type === 'ok' && e.state && TERMINAL.has(e.state));
    if (lastShown) {
      const paymentCharges = payments
        .filter((p) => p.id === lastShown.paymentId)
        .flatMap(netCharges);
      const chargedOnce = paymentCharges.length === 1;
      const agrees = CHARGED.has(lastShown.state!) ? chargedOnce : paymentCharges.length === 0;
      if (!agrees) {
        violations.push({
          ...where,
          paymentId: lastShown.paymentId,
          kind: 'shown_disagrees_with_ledger',
          detail: `the client was shown ${lastShown.state}; the ledger holds ${paymentCharges.length} charge(s) for ${lastShown.paymentId}`,
        });
      }
    }
  }

  // Money: refunds and captures against both databases, conserved per payment and tenant.
  violations.push(
    ...checkMoney({
      snapshot,
      completions,
      receivedOf,
      intentOf: (p) => intentOfKey(completions, p.tenantId, p.idempotencyKey),
    }),
  );

  const failover = snapshot.failover
    ? checkFailover({
        completions,
        snapshot: { ...snapshot, failover: snapshot.failover },
        intents: input.intents,
        netCharges,
      })
    : undefined;
  if (failover) violations.push(...failover.violations);

  for (const exit of input.events.filter(
    (e): e is LifecycleEvent => e.type === 'process' && e.event === 'exited',
  )) {
    violations.push({
      kind: 'process_died',
      detail: `${exit.process} exited without the nemesis at ${exit.at} ms: ${exit.detail ?? ''}`,
    });
  }

  const healEpoch = input.startedAt + input.healAt;
  const samples = snapshot.payments
    .map((p) => p.updatedAt - healEpoch)
    .filter((ms) => ms > 0)
    .sort((a, b) => a - b);
  return {
    violations,
    // Milliseconds from the heal to each payment's last change, for those changed after it.
    convergence: {
      p50: percentile(samples, 0.5),
      p99: percentile(samples, 0.99),
      max: samples.at(-1) ?? 0,
      samples: samples.length,
    },
    ...(failover ? { failover: failover.findings } : {}),
  };
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

function intentOfKey(
  events: readonly ClientEvent[],
  tenantId: string,
  key: string,
): string | undefined {
  return events.find((e) => e.tenantId === tenantId && e.key === key)?.intent;
}
