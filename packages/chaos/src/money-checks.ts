import { groupBy, tupleKey } from './group.ts';
import { type ClientEvent, isOperatorRequest } from './history.ts';
import type { AppPayment, AppRefund, LedgerEntry, Snapshot } from './target.ts';
import type { Violation } from './violations.ts';

/** Refund states after which nothing moves again. */
const FINAL_REFUND = new Set(['succeeded', 'failed']);
/** Refund states in which the processor holds the money returned. */
const HELD_REFUND = new Set(['pending', 'succeeded']);

/** The processor's refusals of a refund for more than the charge has left (Stripe's codes). */
const OVER_CAP_REFUSALS = new Set(['amount_too_large', 'charge_already_refunded']);

export const sum = (rows: readonly { amount: number }[]) => rows.reduce((n, r) => n + r.amount, 0);
/** Where a client's answer puts a violation. */
export const whereOf = (e: ClientEvent) => ({
  intent: e.intent,
  tenantId: e.tenantId,
  paymentId: e.paymentId,
});

/**
 * The money rules of captures and refunds, from both databases and what the operator's
 * clients were shown, one family of checks after another (the order of the findings).
 */
export function checkMoney(input: {
  snapshot: Snapshot;
  completions: readonly ClientEvent[];
  /** What the processor should hold for a payment (its amount, or what a capture took). */
  receivedOf: (p: AppPayment) => number;
  intentOf: (p: AppPayment) => string | undefined;
  books: MoneyBooks;
}): Violation[] {
  const { books } = input;
  const perPayment = input.snapshot.payments.flatMap((p) => checkPaymentMoney(p, input, books));
  return [
    ...checkMoneyKeys(input.completions, books.ledgerRefunds),
    ...checkRudeOperators(input),
    ...perPayment,
    ...checkShownRefunds(input.completions, books),
    ...checkChallenges(input, books.chargesOf),
    ...checkTenantMoneyConserved(input, perPayment),
  ];
}

type MoneyInput = Parameters<typeof checkMoney>[0];
type MoneyBooks = ReturnType<typeof moneyBooks>;

/** Both databases' money, looked up per payment and per refund. */
export function moneyBooks(snapshot: Snapshot) {
  const appRefunds = snapshot.refunds ?? [];
  const ledgerRefunds = snapshot.ledger.filter((l) => l.kind === 'refund');
  const refundsOf = groupBy(ledgerRefunds, (l) => tupleKey(l.tenantId, l.paymentId));
  const chargesOf = groupBy(
    snapshot.ledger.filter((l) => l.kind === 'charge'),
    (l) => tupleKey(l.tenantId, l.paymentId),
  );
  const appRefundsOf = groupBy(appRefunds, (r) => tupleKey(r.tenantId, r.paymentId));
  const refundById = new Map(appRefunds.map((r) => [tupleKey(r.tenantId, r.id), r]));
  /** The ledger rows an app's refund booked. */
  const rowsOf = (refund: AppRefund) =>
    (refundsOf.get(tupleKey(refund.tenantId, refund.paymentId)) ?? []).filter(
      (l) =>
        l.idempotencyKey === refund.downstreamKey ||
        (refund.processorRefundId !== null && l.refundId === refund.processorRefundId),
    );
  return { ledgerRefunds, refundsOf, chargesOf, appRefundsOf, refundById, rowsOf };
}

/**
 * At most one refund per refund key: the processor booked each downstream key once, and every
 * answer to one operator key named one refund (`double_refund`). An operator key once
 * accepted is never refused afterwards (`wrongly_refused`).
 */
function checkMoneyKeys(
  completions: readonly ClientEvent[],
  ledgerRefunds: readonly LedgerEntry[],
): Violation[] {
  const violations: Violation[] = [];
  // A failed refund's return row aside.
  for (const rows of groupBy(
    ledgerRefunds.filter((l) => l.idempotencyKey && l.amount > 0),
    (l) => tupleKey(l.accountId, l.idempotencyKey),
  ).values()) {
    if (rows.length > 1) {
      violations.push({
        kind: 'double_refund',
        tenantId: rows[0]!.tenantId ?? undefined,
        paymentId: rows[0]!.paymentId ?? undefined,
        detail: `${rows.length} refunds at the processor with key ${rows[0]!.idempotencyKey}: ${rows.map((r) => `${r.refundId} ${r.amount}`).join(', ')}`,
      });
    }
  }
  for (const answers of groupBy(
    completions.filter((e) => e.f === 'refund' && e.type === 'ok' && e.refundId),
    (e) => tupleKey(e.tenantId, e.key),
  ).values()) {
    const ids = new Set(answers.map((e) => e.refundId));
    if (ids.size > 1) {
      violations.push({
        kind: 'double_refund',
        ...whereOf(answers[0]!),
        detail: `refund key ${answers[0]!.key} was answered with ${ids.size} refunds: ${[...ids].join(', ')}`,
      });
    }
  }
  // A refusal of a key completed after its acceptance is the request refused for its own
  // effect (a double-click's second press that read no key, then found the first's capture).
  for (const answers of groupBy(completions.filter(isOperatorRequest), (e) =>
    tupleKey(e.tenantId, e.f, e.key),
  ).values()) {
    const accepted = answers.find((e) => e.type === 'ok');
    const refused = answers.find(
      (e) => e.type === 'fail' && accepted && e.at >= accepted.at && isBusinessRefusal(e),
    );
    if (accepted && refused) {
      violations.push({
        kind: 'wrongly_refused',
        ...whereOf(refused),
        detail: `${refused.f} key ${refused.key} was accepted at ${accepted.at} ms, then refused at ${refused.at} ms with ${refused.status} ${refused.error ?? ''} instead of replayed`,
      });
    }
  }
  return violations;
}

/**
 * One payment's refunds: each one's state agrees with the ledger (succeeded / pending: its
 * amount booked once, failed: nothing kept) and none is unanswered after the heal; its money
 * back is the app's refunds and no more (`double_refund`), never beyond what it received
 * (`over_refund`); and its money is conserved: charges - refunds (signed: a failed refund's
 * return is negative) = what it received - what the app holds refunded.
 */
function checkPaymentMoney(
  payment: AppPayment,
  { receivedOf, intentOf }: MoneyInput,
  books: MoneyBooks,
): Violation[] {
  const violations: Violation[] = [];
  const key = tupleKey(payment.tenantId, payment.id);
  const where = { intent: intentOf(payment), tenantId: payment.tenantId, paymentId: payment.id };
  const found = (kind: Violation['kind'], detail: string) =>
    violations.push({ ...where, kind, detail });
  const refunds = books.appRefundsOf.get(key) ?? [];
  const ledgerBack = sum(books.refundsOf.get(key) ?? []);
  const charged = sum(books.chargesOf.get(key) ?? []);
  const held = sum(refunds.filter((r) => HELD_REFUND.has(r.status)));
  const open = refunds.filter((r) => !FINAL_REFUND.has(r.status) && r.status !== 'pending');

  for (const refund of open) {
    found('not_terminal', `refund ${refund.id} still ${refund.status} after the heal`);
  }
  for (const refund of refunds.filter((r) => !open.includes(r))) {
    const kept = sum(books.rowsOf(refund));
    const expected = refund.status === 'failed' ? 0 : refund.amount;
    if (kept !== expected) {
      found(
        'state_disagrees_with_ledger',
        `refund ${refund.id} is ${refund.status} (${refund.amount}), the ledger keeps ${kept} refunded for it`,
      );
    }
  }
  if (refunds.length > 0 && open.length === 0 && ledgerBack > held) {
    found(
      'double_refund',
      `the processor refunded ${ledgerBack}, the app's ${refunds.length} refund(s) hold ${held}`,
    );
  }
  if (ledgerBack > charged) {
    found('over_refund', `the processor refunded ${ledgerBack} of ${charged} it charged`);
  }
  // The app accepted more than was left and only the processor's own cap refused it. (On an
  // asynchronously replicated cluster a failover may lose a refund's row, and the app then
  // accepts what the processor refuses: the lost row is the violation there.)
  for (const refund of refunds.filter((r) => OVER_CAP_REFUSALS.has(r.failureCode ?? ''))) {
    found(
      'over_refund',
      `the app accepted refund ${refund.id} of ${refund.amount}; the processor refused it (${refund.failureCode}): more than was left`,
    );
  }
  if (held > receivedOf(payment)) {
    found('over_refund', `the app holds ${held} refunded of ${receivedOf(payment)} received`);
  }
  const net = charged - ledgerBack;
  const owed = receivedOf(payment) - (payment.amountRefunded ?? 0);
  if (net !== owed) {
    found(
      'money_not_conserved',
      `the processor kept ${net} (charged ${charged}, refunded ${ledgerBack}), the payment is owed ${owed}`,
    );
  }
  return violations;
}

/** What each refund's client was last shown, against the ledger. */
function checkShownRefunds(
  completions: readonly ClientEvent[],
  { refundById, rowsOf }: MoneyBooks,
): Violation[] {
  const violations: Violation[] = [];
  for (const [id, answers] of groupBy(
    completions.filter(
      (e) =>
        (e.f === 'refund' || e.f === 'status') &&
        e.type === 'ok' &&
        e.refundId &&
        FINAL_REFUND.has(e.refundState ?? ''),
    ),
    (e) => tupleKey(e.tenantId, e.refundId),
  )) {
    const shown = answers.at(-1)!;
    const refund = refundById.get(id);
    const kept = refund ? sum(rowsOf(refund)) : 0;
    const agrees =
      shown.refundState === 'succeeded'
        ? refund !== undefined && kept === refund.amount
        : kept === 0;
    if (!agrees) {
      violations.push({
        kind: 'shown_disagrees_with_ledger',
        ...whereOf(shown),
        detail: `the client was shown refund ${shown.refundId} ${shown.refundState}; the ledger keeps ${kept} refunded for it`,
      });
    }
  }
  return violations;
}

/** Per tenant: money no payment names (a payment's own difference is reported with it). */
function checkTenantMoneyConserved(
  { snapshot, receivedOf }: MoneyInput,
  perPayment: readonly Violation[],
): Violation[] {
  const explained = new Set(
    perPayment.filter((v) => v.kind === 'money_not_conserved').map((v) => v.tenantId),
  );
  const tenants = new Set([
    ...snapshot.payments.map((p) => p.tenantId),
    ...snapshot.ledger.map((l) => l.tenantId ?? '?'),
  ]);
  const violations: Violation[] = [];
  for (const tenantId of tenants) {
    if (explained.has(tenantId)) continue;
    const kept = snapshot.ledger
      .filter((l) => (l.tenantId ?? '?') === tenantId)
      .reduce((n, l) => n + (l.kind === 'charge' ? l.amount : -l.amount), 0);
    const owed = snapshot.payments
      .filter((p) => p.tenantId === tenantId)
      .reduce((n, p) => n + receivedOf(p) - (p.amountRefunded ?? 0), 0);
    if (kept !== owed) {
      violations.push({
        kind: 'money_not_conserved',
        tenantId,
        detail: `the processor took ${kept}, succeeded payments total ${owed} (difference ${kept - owed})`,
      });
    }
  }
  return violations;
}

/**
 * 3-D Secure: the shopper's answer decides. A challenge failed or left charges nothing; a left
 * one ends `canceled` (the reconciler's), a failed one `failed` or `canceled` (answer lost).
 */
function checkChallenges(
  input: Pick<MoneyInput, 'snapshot' | 'completions' | 'intentOf'>,
  chargesOfPayment: Map<string, LedgerEntry[]>,
): Violation[] {
  const violations: Violation[] = [];
  const paymentById = new Map(input.snapshot.payments.map((p) => [tupleKey(p.tenantId, p.id), p]));
  for (const answered of input.completions.filter(
    (e) => e.f === 'challenge' && (e.answer === 'fail' || e.answer === 'leave') && e.paymentId,
  )) {
    const key = tupleKey(answered.tenantId, answered.paymentId!);
    const payment = paymentById.get(key);
    const charged = sum(chargesOfPayment.get(key) ?? []);
    const ended = payment?.status ?? 'missing';
    const allowed = answered.answer === 'leave' ? ['canceled'] : ['failed', 'canceled'];
    // Still waiting for the bank after the heal is `not_terminal`, reported with the payments.
    if (charged === 0 && (allowed.includes(ended) || ended === 'requires_action')) continue;
    violations.push({
      kind: 'challenge_not_honoured',
      ...whereOf(answered),
      detail: `the shopper ${answered.answer === 'fail' ? 'failed' : 'left'} the 3-D Secure challenge; the payment is ${ended} and the processor charged ${charged}`,
    });
  }
  return violations;
}

/**
 * What rude operators may never get away with, on any transport: a key accepted for two
 * operations, or for one while it holds another (`key_reuse_accepted`); a signed-out session's
 * request answered ok or its key holding an action (`revoked_session_acted`); two operators
 * racing on one payment under two keys both accepted (`racing_actions_both_accepted`).
 */
function checkRudeOperators(input: Pick<MoneyInput, 'snapshot' | 'completions'>): Violation[] {
  const violations: Violation[] = [];
  const operator = input.completions.filter(isOperatorRequest);
  const actionOfKey = new Map(
    (input.snapshot.moneyActionKeys ?? []).map((k) => [tupleKey(k.tenantId, k.key), k]),
  );
  for (const [key, answers] of groupBy(
    operator.filter((e) => e.type === 'ok'),
    (e) => tupleKey(e.tenantId, e.key),
  )) {
    const ops = new Set(answers.map((e) => e.f));
    const held = actionOfKey.get(key);
    if (ops.size > 1 || (held && !ops.has(held.kind as ClientEvent['f']))) {
      violations.push({
        kind: 'key_reuse_accepted',
        ...whereOf(answers[0]!),
        detail: `key ${answers[0]!.key} was accepted for ${[...ops].join(' and ')}${held ? `; it holds a ${held.kind}` : ''}`,
      });
    }
  }
  for (const sent of operator.filter((e) => e.revokedSession)) {
    const held = actionOfKey.get(tupleKey(sent.tenantId, sent.key));
    if (sent.type !== 'ok' && !held) continue;
    violations.push({
      kind: 'revoked_session_acted',
      ...whereOf(sent),
      detail: `a ${sent.f} from a signed-out operator session was answered ${sent.type} ${sent.status ?? ''}${held ? `, and its key holds a ${held.kind} of ${held.paymentId}` : ''}`,
    });
  }
  for (const answers of groupBy(
    operator.filter((e) => e.race && e.type === 'ok' && e.f !== 'refund'),
    (e) => tupleKey(e.tenantId, e.paymentId),
  ).values()) {
    const keys = new Set(answers.map((e) => e.key));
    if (keys.size < 2) continue;
    violations.push({
      kind: 'racing_actions_both_accepted',
      ...whereOf(answers[0]!),
      detail: `operators racing on one payment were both accepted: ${answers.map((e) => `${e.f} ${e.key}`).join(', ')}`,
    });
  }
  return violations;
}

/** A refusal for what was asked, not a key in use, a rate limit or an outage. */
const isBusinessRefusal = (e: ClientEvent) =>
  !(
    e.status === 429 ||
    e.status === 503 ||
    (e.status === 409 && e.error?.startsWith('idempotency_'))
  );
