import postgres from 'postgres';

export interface VerifyInvariantOptions {
  /** The application's database (payments). */
  databaseUrl: string;
  /** The processor's own database (its ledger is the truth about money). */
  processorDatabaseUrl: string;
  /**
   * The system has converged (no more work in flight): nothing may be non-terminal and
   * every payment's state must equal the ledger's.
   */
  converged?: boolean;
  /** Checkout intents that must each have exactly one payment (chaos tests know them). */
  expectedCheckouts?: { tenantId: string; idempotencyKey: string }[];
}

export type ViolationKind =
  | 'double_charge'
  | 'duplicate_payment'
  | 'missing_payment'
  | 'charge_without_payment'
  | 'wrong_amount'
  | 'charged_but_not_succeeded'
  | 'succeeded_without_charge'
  | 'intent_mismatch'
  | 'double_refund'
  | 'over_refund'
  | 'refund_mismatch'
  | 'double_capture'
  | 'money_not_conserved'
  | 'not_converged';

interface InvariantViolation {
  kind: ViolationKind;
  tenantId: string;
  paymentId?: string;
  detail: string;
}

export interface InvariantReport {
  payments: number;
  ledgerCharges: number;
  violations: InvariantViolation[];
}

interface PaymentRow {
  tenant_id: string;
  id: string;
  status: string;
  amount: number;
  /** What a capture took (`captured` only): its one charge is of this amount. */
  amount_captured: number | null;
  /** `manual`: an authorisation, its one charge booked by its capture. */
  capture_method: string;
  idempotency_key: string;
  downstream_key: string;
  processor_payment_intent_id: string | null;
  /** Its captures or voids not yet answered (`pending` / `unknown`). */
  open_actions: number;
  /** What the app holds refunded: its refunds the processor took (`pending` / `succeeded`). */
  refunded: number;
  /** Its refunds not yet answered (`requested` / `unknown`). */
  open_refunds: number;
}

interface LedgerRefundRow {
  account_id: string;
  /** Negative: a refund that failed after it succeeded gave the money back. */
  amount: number;
  idempotency_key: string | null;
  tenant_id: string | null;
  payment_id: string | null;
}

interface LedgerChargeRow {
  account_id: string;
  payment_intent_id: string;
  amount: number;
  idempotency_key: string | null;
  tenant_id: string | null;
  payment_id: string | null;
}

/**
 * Checks the exactly-once invariant (packages/invariant/README.md) from the two databases,
 * for every payment:
 * - the processor's ledger holds at most one charge per payment and per downstream key (an
 *   authorisation's charge is its capture: captured once);
 * - the app holds exactly one payment per checkout intent (tenant, Idempotency-Key), and
 *   every charge in the ledger is accounted for: one without payment metadata, or naming a
 *   payment the app does not hold, is a violation;
 * - every charge is of its payment's amount (a captured one: of the amount it captured);
 * - a payment the ledger charged is never `declined`/`failed`/`authorized`/`voided`/`canceled` (an
 *   authorisation books nothing until it is captured), and a `succeeded` or `captured` one
 *   was charged, with the same PaymentIntent (always, converged or not);
 * - at most one refund per refund key, and a payment's refunds (net of refunds that failed
 *   and gave the money back) never exceed what was charged for it;
 * - with `converged`: no payment is `processing`/`unknown` and no capture, void or refund is
 *   still unanswered, so states equal the ledger's, what the app holds refunded equals
 *   what the ledger refunded, and money is conserved per payment and per tenant.
 */
export async function verifyInvariant(options: VerifyInvariantOptions): Promise<InvariantReport> {
  const app = postgres(options.databaseUrl, { max: 1, onnotice: () => {} });
  const processor = postgres(options.processorDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    const payments = await app<PaymentRow[]>`
      select tenant_id, id, status, amount, amount_captured, capture_method, idempotency_key,
             downstream_key, processor_payment_intent_id,
             (select count(*)::int from payment_actions as action
               where action.tenant_id = payment.tenant_id and action.payment_id = payment.id
                 and action.status in ('pending', 'unknown')) as open_actions,
             (select coalesce(sum(refund.amount), 0)::int from refunds as refund
               where refund.tenant_id = payment.tenant_id and refund.payment_id = payment.id
                 and refund.status in ('pending', 'succeeded')) as refunded,
             (select count(*)::int from refunds as refund
               where refund.tenant_id = payment.tenant_id and refund.payment_id = payment.id
                 and refund.status in ('requested', 'unknown')) as open_refunds
      from payments as payment`;
    const charges = await processor<LedgerChargeRow[]>`
      select account_id, payment_intent_id, amount::float8 as amount, idempotency_key,
             metadata->>'tenant_id' as tenant_id, metadata->>'payment_id' as payment_id
      from ledger_entries where kind = 'charge' order by seq`;
    const refunds = await processor<LedgerRefundRow[]>`
      select account_id, amount::float8 as amount, idempotency_key,
             metadata->>'tenant_id' as tenant_id, metadata->>'payment_id' as payment_id
      from ledger_entries where kind = 'refund' order by seq`;
    const violations = [
      ...findViolations(payments, charges, options),
      ...findRefundViolations(payments, charges, refunds, options),
    ];
    if (options.converged) {
      violations.push(...findMoneyViolations(payments, charges, refunds, violations));
    }
    return { payments: payments.length, ledgerCharges: charges.length, violations };
  } finally {
    await Promise.all([app.end({ timeout: 5 }), processor.end({ timeout: 5 })]);
  }
}

/** States in which the ledger must hold no charge for the payment. */
const NEVER_CHARGED = ['declined', 'failed', 'authorized', 'voided', 'canceled'];

function findViolations(
  payments: PaymentRow[],
  charges: LedgerChargeRow[],
  options: VerifyInvariantOptions,
): InvariantViolation[] {
  // At most one charge per downstream key (per processor account).
  const violations: InvariantViolation[] = sameKeyGroups(charges).map(([first, ...more]) => ({
    kind: 'double_charge',
    tenantId: first.tenant_id ?? first.account_id,
    paymentId: first.payment_id ?? undefined,
    detail: `${more.length + 1} charges with downstream key ${first.idempotency_key}: ${[first, ...more].map((c) => c.payment_intent_id).join(', ')}`,
  }));

  // Exactly one payment per checkout intent.
  const byCheckout = groupBy(payments, (p) => `${p.tenant_id}\u0000${p.idempotency_key}`);
  for (const group of byCheckout.values()) {
    if (group.length > 1) {
      violations.push({
        kind: 'duplicate_payment',
        tenantId: group[0]!.tenant_id,
        detail: `${group.length} payments for checkout key ${group[0]!.idempotency_key}: ${group.map((p) => p.id).join(', ')}`,
      });
    }
  }
  for (const expected of options.expectedCheckouts ?? []) {
    if (!byCheckout.has(`${expected.tenantId}\u0000${expected.idempotencyKey}`)) {
      violations.push({
        kind: 'missing_payment',
        tenantId: expected.tenantId,
        detail: `no payment for checkout key ${expected.idempotencyKey}`,
      });
    }
  }

  // Each payment against its charges in the ledger.
  const chargesByPayment = groupBy(
    charges.filter((c) => c.tenant_id !== null && c.payment_id !== null),
    ledgerPaymentKey,
  );
  const known = new Set(payments.map(paymentKeyOf));
  // A charge that names no payment is money taken that nobody can account for.
  for (const c of charges.filter((c) => c.tenant_id === null || c.payment_id === null)) {
    violations.push({
      kind: 'charge_without_payment',
      tenantId: c.tenant_id ?? c.account_id,
      paymentId: c.payment_id ?? undefined,
      detail: `the ledger charged ${c.amount} (${c.payment_intent_id} on ${c.account_id}) without the payment metadata (tenant_id, payment_id) that names its payment`,
    });
  }
  for (const [key, group] of chargesByPayment) {
    if (!known.has(key)) {
      violations.push({
        kind: 'charge_without_payment',
        tenantId: group[0]!.tenant_id!,
        paymentId: group[0]!.payment_id!,
        detail: `the ledger charged ${group.length}x a payment the app does not hold`,
      });
    }
  }
  for (const payment of payments) {
    const report = reporterFor(violations, payment);
    const charged = chargesByPayment.get(paymentKeyOf(payment)) ?? [];
    if (charged.length > 1) {
      // An authorisation's charge is booked by its capture: two are one payment captured twice.
      const manual = payment.capture_method === 'manual';
      report(
        manual ? 'double_capture' : 'double_charge',
        `${charged.length} ${manual ? 'captures' : 'charges'}: ${charged.map((c) => c.payment_intent_id).join(', ')}`,
      );
    }
    const expected =
      payment.status === 'captured' ? (payment.amount_captured ?? payment.amount) : payment.amount;
    for (const c of charged.filter((c) => c.amount !== expected)) {
      report(
        'wrong_amount',
        `the ledger charged ${c.amount} (${c.payment_intent_id}), the payment is for ${expected}`,
      );
    }
    if (charged.length > 0 && NEVER_CHARGED.includes(payment.status)) {
      report(
        'charged_but_not_succeeded',
        `payment is ${payment.status} but the ledger charged ${charged[0]!.payment_intent_id}`,
      );
    }
    const chargedStatus = payment.status === 'succeeded' || payment.status === 'captured';
    if (charged.length === 0 && chargedStatus) {
      report('succeeded_without_charge', 'no charge in the ledger');
    }
    if (
      charged.length === 1 &&
      chargedStatus &&
      payment.processor_payment_intent_id !== charged[0]!.payment_intent_id
    ) {
      report(
        'intent_mismatch',
        `app says ${payment.processor_payment_intent_id}, ledger says ${charged[0]!.payment_intent_id}`,
      );
    }
    if (options.converged && (payment.status === 'processing' || payment.status === 'unknown')) {
      report(
        'not_converged',
        `still ${payment.status}; the ledger holds ${charged.length} charge(s)`,
      );
    }
    if (options.converged && payment.open_actions > 0) {
      report('not_converged', `${payment.open_actions} capture or void still unanswered`);
    }
  }
  return violations;
}

function findRefundViolations(
  payments: PaymentRow[],
  charges: LedgerChargeRow[],
  refunds: LedgerRefundRow[],
  options: VerifyInvariantOptions,
): InvariantViolation[] {
  // At most one refund per refund key (a negative row is a failed refund's return, not a refund).
  const violations: InvariantViolation[] = sameKeyGroups(refunds.filter((r) => r.amount > 0)).map(
    ([first, ...more]) => ({
      kind: 'double_refund',
      tenantId: first.tenant_id ?? first.account_id,
      paymentId: first.payment_id ?? undefined,
      detail: `${more.length + 1} refunds with downstream key ${first.idempotency_key}`,
    }),
  );
  const charged = totalsBy(charges, ledgerPaymentKey);
  const refunded = totalsBy(refunds, ledgerPaymentKey);
  for (const payment of payments) {
    const key = paymentKeyOf(payment);
    const report = reporterFor(violations, payment);
    const ledgerRefunded = refunded.get(key) ?? 0;
    if (ledgerRefunded > (charged.get(key) ?? 0)) {
      report(
        'over_refund',
        `the ledger refunded ${ledgerRefunded}, it charged ${charged.get(key) ?? 0}`,
      );
    }
    if (payment.refunded > receivedOf(payment)) {
      report(
        'over_refund',
        `the app holds ${payment.refunded} refunded of ${receivedOf(payment)} received`,
      );
    }
    if (options.converged && payment.open_refunds > 0) {
      report('not_converged', `${payment.open_refunds} refund(s) still unanswered`);
    } else if (options.converged && payment.refunded !== ledgerRefunded) {
      report(
        'refund_mismatch',
        `the app holds ${payment.refunded} refunded, the ledger ${ledgerRefunded}`,
      );
    }
  }
  return violations;
}

/** What the processor should hold for a payment: its amount, or the part its capture took. */
function receivedOf(payment: PaymentRow): number {
  if (payment.status === 'succeeded') return payment.amount;
  if (payment.status === 'captured') return payment.amount_captured ?? 0;
  return 0;
}

/**
 * Converged, money is conserved: per payment, what the ledger kept (charges minus refunds,
 * a failed refund's return negative) is what it received minus what the app holds refunded;
 * per tenant, the same over all its money, so money no payment names shows too. A payment
 * another rule already reported is not reported again.
 */
function findMoneyViolations(
  payments: PaymentRow[],
  charges: LedgerChargeRow[],
  refunds: LedgerRefundRow[],
  reported: readonly InvariantViolation[],
): InvariantViolation[] {
  const violations: InvariantViolation[] = [];
  const charged = totalsBy(charges, ledgerPaymentKey);
  const refunded = totalsBy(refunds, ledgerPaymentKey);
  const flagged = new Set(reported.map((v) => `${v.tenantId}\u0000${v.paymentId ?? null}`));
  for (const payment of payments) {
    const owed = receivedOf(payment) - payment.refunded;
    const key = paymentKeyOf(payment);
    const net = (charged.get(key) ?? 0) - (refunded.get(key) ?? 0);
    if (net !== owed && !flagged.has(key)) {
      violations.push({
        kind: 'money_not_conserved',
        tenantId: payment.tenant_id,
        paymentId: payment.id,
        detail: `the ledger kept ${net} (charges minus refunds), the payment is owed ${owed}`,
      });
    }
  }
  const tenantOf = (row: { tenant_id: string | null; account_id: string }) =>
    row.tenant_id ?? row.account_id;
  const chargedByTenant = totalsBy(charges, tenantOf);
  const refundedByTenant = totalsBy(refunds, tenantOf);
  const owedByTenant = totalsBy(
    payments.map((p) => ({ tenant: p.tenant_id, amount: receivedOf(p) - p.refunded })),
    (p) => p.tenant,
  );
  const tenantsReported = new Set(reported.map((v) => v.tenantId));
  for (const tenant of new Set([
    ...chargedByTenant.keys(),
    ...refundedByTenant.keys(),
    ...owedByTenant.keys(),
  ])) {
    const net = (chargedByTenant.get(tenant) ?? 0) - (refundedByTenant.get(tenant) ?? 0);
    const owed = owedByTenant.get(tenant) ?? 0;
    if (
      net !== owed &&
      !tenantsReported.has(tenant) &&
      !violations.some((v) => v.tenantId === tenant)
    ) {
      violations.push({
        kind: 'money_not_conserved',
        tenantId: tenant,
        detail: `the ledger kept ${net} in all, the tenant's payments are owed ${owed}`,
      });
    }
  }
  return violations;
}

/** Reports a violation of `payment` into `violations`. */
function reporterFor(violations: InvariantViolation[], payment: PaymentRow) {
  return (kind: ViolationKind, detail: string) =>
    violations.push({ kind, tenantId: payment.tenant_id, paymentId: payment.id, detail });
}

/** A payment's key: its tenant and id. */
const paymentKeyOf = (payment: PaymentRow) => `${payment.tenant_id}\u0000${payment.id}`;

/** The key of the payment a ledger row's metadata names (`null` halves when it names none). */
const ledgerPaymentKey = (row: { tenant_id: string | null; payment_id: string | null }) =>
  `${row.tenant_id}\u0000${row.payment_id}`;

/** The ledger rows sharing one downstream key on one account, each group of two or more. */
function sameKeyGroups<T extends { account_id: string; idempotency_key: string | null }>(
  rows: T[],
): [T, ...T[]][] {
  const groups = groupBy(
    rows.filter((row) => row.idempotency_key !== null),
    (row) => `${row.account_id}\u0000${row.idempotency_key}`,
  );
  return [...groups.values()].filter((group): group is [T, ...T[]] => group.length > 1);
}

/** The sum of `amount` over `rows`, per `keyOf(row)`. */
function totalsBy<T extends { amount: number }>(
  rows: T[],
  keyOf: (row: T) => string,
): Map<string, number> {
  const totals = new Map<string, number>();
  for (const row of rows) totals.set(keyOf(row), (totals.get(keyOf(row)) ?? 0) + row.amount);
  return totals;
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
