// What a failover may do to the app's database: lose acknowledged commits, resurrect dropped
// rows, or charge a checkout twice across a lost payment and its re-creation.

import { groupBy, tupleKey } from './group.ts';
import type { ClientEvent } from './history.ts';
import { whereOf } from './money-checks.ts';
import type { AppPayment, LedgerEntry, LostRow, Snapshot } from './target.ts';
import type { Violation } from './violations.ts';

/** The history's `process` of operators asking again for a refund a failover lost. */
export const RETURNING_OPERATOR = 'returning-operator';

/**
 * What the failovers of a run did, for the report (async mode counts, the others must be 0).
 * A type, not an interface: the declarations of `checkHistory`'s inferred return inline it.
 */
type FailoverFindings = {
  mode: string;
  failovers: number;
  /** Per table: ids a client was answered ok for, absent after the run. */
  lostAcknowledged: { payments: string[]; refunds: string[] };
  /** Per table: rows the primary held right before a failover and the new one did not. */
  goneInFailovers: Record<string, number>;
  /** Ids a failover dropped that are back after the run. */
  resurrected: string[];
};

/**
 * The ledger as the app's payments own it: an entry naming a payment the app no longer holds
 * (its row lost in a failover) belongs to the payment re-created for the same checkout, which
 * shares its downstream key and adopted its processor intent: its charge by that key, the
 * refunds of that lost payment with it. An entry whose downstream key no present payment has
 * stays where it was (a charge without a payment).
 */
export function attributeToRecreatedPayments(snapshot: Snapshot): Snapshot {
  const present = new Set(snapshot.payments.map((p) => tupleKey(p.tenantId, p.id)));
  const byDownstreamKey = new Map(
    snapshot.payments
      .filter((p) => p.downstreamKey)
      .map((p) => [tupleKey(p.tenantId, p.downstreamKey), p]),
  );
  const ownerOfLost = new Map<string, string>();
  for (const entry of snapshot.ledger) {
    const lost = tupleKey(entry.tenantId, entry.paymentId);
    if (present.has(lost) || !entry.downstreamKey) continue;
    const owner = byDownstreamKey.get(tupleKey(entry.tenantId, entry.downstreamKey));
    if (owner) ownerOfLost.set(lost, owner.id);
  }
  const ledger = snapshot.ledger.map((entry): LedgerEntry => {
    const owner = ownerOfLost.get(tupleKey(entry.tenantId, entry.paymentId));
    return owner ? { ...entry, paymentId: owner } : entry;
  });
  return { ...snapshot, ledger };
}

/**
 * The failover checks. In `async` mode a lost acknowledged commit is counted, not a
 * violation (the standby never had it); in a synchronous mode it is one. A resurrected row
 * and a checkout charged twice are violations in every mode.
 */
export function checkFailover(input: {
  completions: readonly ClientEvent[];
  /** Attributed with `attributeToRecreatedPayments`. */
  snapshot: Snapshot & { failover: NonNullable<Snapshot['failover']> };
  intents: readonly { id: string; tenantId: string }[];
  /** A present payment's charges the checker counts (refunded ones netted out). */
  netCharges: (payment: AppPayment) => LedgerEntry[];
}): { violations: Violation[]; findings: FailoverFindings } {
  const { snapshot, completions } = input;
  const { mode, failovers } = snapshot.failover;
  const payments = new Set(snapshot.payments.map((p) => tupleKey(p.tenantId, p.id)));
  const paymentOfRefund = new Map(
    (snapshot.refunds ?? []).map((r) => [tupleKey(r.tenantId, r.id), r.paymentId]),
  );
  const violations: Violation[] = [];

  const answered = (
    fs: readonly ClientEvent['f'][],
    idIn: (e: ClientEvent) => string | undefined,
  ) => completions.filter((e) => e.type === 'ok' && fs.includes(e.f) && idIn(e));
  const lostPayments = new Map<string, ClientEvent>();
  for (const e of answered(['pay', 'late', 'reuse'], (e) => e.paymentId)) {
    const id = tupleKey(e.tenantId, e.paymentId);
    if (!payments.has(id) && !lostPayments.has(id)) lostPayments.set(id, e);
  }
  // A refund is back after its loss under the same id (derived from the operator's key): asked
  // for again by its operator, or taken from the processor by its payment's re-creation (then
  // under that payment). Lost all the same.
  const askedAgain = new Set(
    completions
      .filter((e) => e.f === 'refund' && e.process === RETURNING_OPERATOR)
      .map((e) => tupleKey(e.tenantId, e.key)),
  );
  const lostRefunds = new Map<string, ClientEvent>();
  for (const e of answered(['refund'], (e) => e.refundId)) {
    if (e.process === RETURNING_OPERATOR) continue;
    const id = tupleKey(e.tenantId, e.refundId);
    const now = paymentOfRefund.get(id);
    const gone = now !== e.paymentId || askedAgain.has(tupleKey(e.tenantId, e.key));
    if (gone && !lostRefunds.has(id)) lostRefunds.set(id, e);
  }
  if (mode !== 'async') {
    for (const [table, lost] of [
      ['payments', lostPayments],
      ['refunds', lostRefunds],
    ] as const) {
      for (const e of lost.values()) {
        violations.push({
          kind: 'lost_acknowledged_commit',
          ...whereOf(e),
          detail: `${table}: answered ${e.status} at ${e.at} ms (${table === 'refunds' ? e.refundId : e.paymentId}); the ${mode} cluster's primary no longer holds it`,
        });
      }
    }
  }

  // Dropped by a failover, back after the run (the same row: its created_at too): a forked
  // timeline's rows were not rewound. Not a refund written again after the failover under its
  // own id (derived from its operator's key: asked for again, or taken from the processor by its
  // payment's re-creation), which is a new row.
  const goneInFailovers: Record<string, number> = {};
  const resurrected: string[] = [];
  for (const f of failovers) {
    for (const [table, rows] of Object.entries(f.lost)) {
      goneInFailovers[table] = (goneInFailovers[table] ?? 0) + rows.length;
      const present = new Map<string, number | undefined>(
        table === 'payments'
          ? snapshot.payments.map((p) => [p.id, p.createdAt])
          : table === 'refunds'
            ? (snapshot.refunds ?? []).map((r) => [r.id, r.createdAt])
            : [],
      );
      const cameBack = ({ id, createdAt }: LostRow) => {
        if (!present.has(id)) return false;
        const writtenAt = present.get(id);
        return writtenAt === undefined || writtenAt === createdAt;
      };
      for (const { id } of rows.filter(cameBack)) {
        resurrected.push(id);
        violations.push({
          kind: 'resurrected_row',
          paymentId: table === 'payments' ? id : undefined,
          detail: `${table} ${id}: gone on ${f.to} after the ${f.kind} from ${f.from}, present after the run`,
        });
      }
    }
  }

  // One checkout, a lost payment and its re-creation: the ledger may hold one charge between
  // them (the re-created payment adopts the first intent), never two.
  const chargesOfLost = groupBy(
    snapshot.ledger.filter(
      (l) => l.kind === 'charge' && lostPayments.has(tupleKey(l.tenantId, l.paymentId)),
    ),
    (l) => tupleKey(l.tenantId, l.paymentId),
  );
  for (const intent of input.intents) {
    const seen = completions.filter((e) => e.intent === intent.id);
    const keys = new Set(seen.map((e) => e.key));
    const lostIds = [...lostPayments.keys()].filter(
      (id) => lostPayments.get(id)!.intent === intent.id,
    );
    const lostCharges = lostIds.flatMap((id) => chargesOfLost.get(id) ?? []);
    if (lostCharges.length === 0) continue;
    const presentCharges = snapshot.payments
      .filter((p) => p.tenantId === intent.tenantId && keys.has(p.idempotencyKey))
      .flatMap(input.netCharges);
    if (lostCharges.length + presentCharges.length > 1) {
      violations.push({
        kind: 'double_charge',
        intent: intent.id,
        tenantId: intent.tenantId,
        detail: `${lostCharges.length + presentCharges.length} charges for one checkout: ${[...lostCharges, ...presentCharges].map((c) => `${c.paymentIntentId} (payment ${c.paymentId})`).join(', ')}; the first payment's row was lost in a failover`,
      });
    }
  }

  return {
    violations,
    findings: {
      mode,
      failovers: failovers.length,
      lostAcknowledged: {
        payments: [...lostPayments.values()].map((e) => e.paymentId!),
        refunds: [...lostRefunds.values()].map((e) => e.refundId!),
      },
      goneInFailovers,
      resurrected,
    },
  };
}
