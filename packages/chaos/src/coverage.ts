import { groupBy, tupleKey } from './group.ts';
import {
  type ClientEvent,
  type HistoryEvent,
  isOperatorRequest,
  type NemesisEvent,
} from './history.ts';
import type { CoverageFloors } from './schedule.ts';
import { isArmedFault, type Snapshot } from './target.ts';

export type Coverage = ReturnType<typeof measureCoverage>;

/** Counts how hard the nemesis bit: a run whose faults never met a checkout proves nothing. */
export function measureCoverage(
  events: readonly HistoryEvent[],
  snapshot: Snapshot,
  faults: readonly string[],
  options: { keyTtlMs: number; startedAt: number },
) {
  const nemesis = events.filter((e): e is NemesisEvent => e.type === 'nemesis');
  // Faults that bit per kind (armed is not fired), and faults injected whether or not they bit.
  const fired: Record<string, number> = {};
  const injected: Record<string, number> = {};
  const failedIds = new Set(
    nemesis.filter((e) => e.detail?.startsWith('not injected')).map((e) => e.id),
  );
  const ends = new Map(nemesis.filter((e) => e.phase === 'end').map((e) => [e.id, e]));
  const uses = snapshot.faultUses ?? { byId: {}, byKind: {} };
  const bit = (e: NemesisEvent): boolean => {
    const end = ends.get(e.id);
    // A storm that terminated backends; COMMIT waits cancelled.
    if (e.kind === 'pg_terminate_storm' || e.kind === 'pg_sync_cancel') return (end?.bit ?? 0) > 0;
    if (isArmedFault(e.kind)) {
      return (end?.faultId ? (uses.byId[end.faultId] ?? 0) : 0) > 0;
    }
    return true;
  };
  for (const e of nemesis) {
    if (e.phase !== 'start' || failedIds.has(e.id)) continue;
    injected[e.kind] = (injected[e.kind] ?? 0) + 1;
    if (bit(e)) fired[e.kind] = (fired[e.kind] ?? 0) + 1;
  }
  const client = events.filter((e): e is ClientEvent => 'op' in e);
  const completions = client.filter((e) => e.type !== 'invoke');
  const keysWithPayment = new Set(
    snapshot.payments.map((p) => tupleKey(p.tenantId, p.idempotencyKey)),
  );
  const lost = completions.filter((e) => e.lostResponse);

  // A disruptive fault inside the window between a charge at the processor and the app
  // recording it: the charge is booked, the payment still changed later.
  const disruptive = nemesis.filter(
    (e) => e.phase === 'start' && /^(kill_|pause_|pg_)/.test(e.kind) && !failedIds.has(e.id),
  );
  const recordedAt = new Map(
    snapshot.payments.map((p) => [tupleKey(p.tenantId, p.id), p.updatedAt - options.startedAt]),
  );
  let killsInAmbiguityWindow = 0;
  for (const fault of disruptive) {
    const hit = snapshot.ledger.some((l) => {
      if (l.kind !== 'charge') return false;
      const chargedAt = l.createdAt - options.startedAt;
      const recorded = recordedAt.get(tupleKey(l.tenantId, l.paymentId));
      return chargedAt <= fault.at && (recorded === undefined || recorded >= fault.at);
    });
    if (hit) killsInAmbiguityWindow++;
  }

  // Late duplicates sent more than the key TTL after the intent's first request.
  const firstInvoke = new Map<string, number>();
  for (const e of client)
    if (e.type === 'invoke' && !firstInvoke.has(e.intent)) firstInvoke.set(e.intent, e.at);
  const expiriesCrossed = completions.filter(
    (e) => e.f === 'late' && e.at - (firstInvoke.get(e.intent) ?? e.at) > options.keyTtlMs,
  ).length;

  const operator = client.filter(isOperatorRequest);
  const invokesPerKey = groupBy(
    operator.filter((e) => e.type === 'invoke'),
    (e) => e.key,
  );
  const statusCount = (status: string) =>
    snapshot.payments.filter((p) => p.status === status).length;
  const moneyFaults = new Set(
    nemesis.filter((e) => e.phase === 'start' && e.id.startsWith('m')).map((e) => e.id),
  );
  // The operator's money flows, from the app's database and the history.
  const money = {
    authorized: statusCount('authorized'),
    captured: statusCount('captured'),
    voided: statusCount('voided'),
    refundsSucceeded: (snapshot.refunds ?? []).filter((r) => r.status === 'succeeded').length,
    refundsRefused: operator.filter(
      (e) => e.f === 'refund' && e.type === 'fail' && e.status === 400,
    ).length,
    // Two invokes of one key in the same millisecond-ish burst: a double-click.
    doubleClicks: [...invokesPerKey.values()].filter(
      (sent) => sent.length > 1 && sent[1]!.at - sent[0]!.at < 50,
    ).length,
    lostAnswers: operator.filter((e) => e.lostResponse).length,
    // Faults aimed at a capture or a refund that bit.
    faultsBit: nemesis.filter((e) => e.phase === 'start' && moneyFaults.has(e.id) && bit(e)).length,
    // Rude operators (`RudePlan`): races run and lost, keys of another operation refused 422,
    // signed-out sessions refused 401, requests over REST or GraphQL under a tRPC key.
    rude: {
      races: new Set(operator.filter((e) => e.race).map((e) => tupleKey(e.tenantId, e.paymentId)))
        .size,
      racesLost: operator.filter((e) => e.race && e.type === 'fail').length,
      keyReuseRefused: operator.filter(
        (e) => e.type === 'fail' && e.status === 422 && e.error === 'idempotency_key_reused',
      ).length,
      revokedRefused: operator.filter(
        (e) => e.revokedSession && e.type === 'fail' && e.status === 401,
      ).length,
      acrossTransports: operator.filter((e) => e.type !== 'invoke' && e.transport).length,
    },
  };

  const challenges = client.filter((e) => e.f === 'challenge' && e.type === 'ok');
  const threeDSecure = {
    // Challenges answered (the processor took it) or left.
    met: challenges.length,
    completed: challenges.filter((e) => e.answer === 'complete').length,
    failed: challenges.filter((e) => e.answer === 'fail').length,
    left: challenges.filter((e) => e.answer === 'leave').length,
    redirectsLost: challenges.filter((e) => e.lostResponse).length,
    canceled: statusCount('canceled'),
  };

  const requests = { ok: 0, fail: 0, info: 0 };
  for (const e of completions) if (e.f !== 'status') requests[e.type as 'ok' | 'fail' | 'info']++;
  return {
    fired,
    injected,
    // Reads of a lagging object answered 404: a lag still running at the heal is cleared with
    // the other faults, so a late `not_found` may bite its charge and never a read.
    laggedReadsAnswered404: uses.byKind.not_found ?? 0,
    // Pauses that stopped a worker inside a job, before its processor call: reported, not required.
    pausesInsideJob: nemesis.filter(
      (e) => e.phase === 'end' && e.kind === 'pause_worker' && (e.bit ?? 0) > 0,
    ).length,
    killsInAmbiguityWindow,
    // Lost answers, and those whose request had committed (its key has a payment).
    lostResponses: lost.length,
    lostResponsesCommitted: lost.filter((e) => keysWithPayment.has(tupleKey(e.tenantId, e.key)))
      .length,
    // Counters only the system can tell: takeovers, stalled workers refused at their first
    // write, reconciler reads of a recorded intent answered 404.
    leaseTakeovers: snapshot.counters.lease_takeovers ?? 0,
    staleWorkersFenced: snapshot.counters.stale_workers_fenced ?? 0,
    unreadableIntentsReconciled: snapshot.counters.unreadable_intents_reconciled ?? 0,
    expiriesCrossed,
    replaysServed: completions.filter((e) => e.replayed).length,
    charges: snapshot.ledger.filter((l) => l.kind === 'charge').length,
    requests,
    browserCustomersPaying: browserCustomersPaying(events),
    // Fault kinds the profile names that never fired (a ci run with any fails).
    neverFired: faults.filter((k) => !fired[k]),
    money,
    threeDSecure,
  };
}

/**
 * Browser customers whose page sent a checkout (`checkout.pay`): what a customer did, not
 * that the runner let it in (one who crashed, found the shop down or left before paying).
 */
export function browserCustomersPaying(events: readonly HistoryEvent[]): number {
  const paying = new Set<string>();
  for (const e of events) {
    if ('op' in e && e.type === 'invoke' && e.f === 'pay' && e.process === 'client-browser')
      paying.add(e.intent);
  }
  return paying.size;
}

export type Achieved = Record<keyof CoverageFloors, number>;

/**
 * What a run achieved, in the floors' terms: what its clients did (from the history and the
 * databases), never what the runner let them try.
 */
export function achieved(
  coverage: Coverage,
  run: { withPayment: number; browserWithPayment: number },
): Achieved {
  return {
    intentsWithPayment: run.withPayment,
    browserStarted: coverage.browserCustomersPaying,
    browserWithPayment: run.browserWithPayment,
    requestsOk: coverage.requests.ok,
    killsInAmbiguityWindow: coverage.killsInAmbiguityWindow,
    lostResponsesCommitted: coverage.lostResponsesCommitted,
    leaseTakeovers: coverage.leaseTakeovers,
    expiriesCrossed: coverage.expiriesCrossed,
    captures: coverage.money.captured,
    refunds: coverage.money.refundsSucceeded,
    threeDSecure: coverage.threeDSecure.met,
    charges: coverage.charges,
  };
}

/**
 * Why a run proves too little: each floor it fell short of ("requestsOk 0 < 100"), and each
 * client that crashed (a crashing client sends nothing, and nothing is then checked).
 */
export function shortfalls(
  actual: Achieved,
  floors: Partial<CoverageFloors> | undefined,
  clientCrashes: readonly string[],
): string[] {
  const out: string[] = [];
  for (const [name, floor] of Object.entries(floors ?? {}) as [keyof CoverageFloors, number][]) {
    if (actual[name] < floor) out.push(`${name} ${actual[name]} < ${floor}`);
  }
  if (clientCrashes.length > 0)
    out.push(`${clientCrashes.length} client(s) crashed: ${clientCrashes.slice(0, 5).join('; ')}`);
  return out;
}
