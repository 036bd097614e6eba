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

const count = <T>(items: readonly T[], test: (item: T) => unknown) => items.filter(test).length;

/** Counts how hard the nemesis bit: a run whose faults never met a checkout proves nothing. */
export function measureCoverage(
  events: readonly HistoryEvent[],
  snapshot: Snapshot,
  faults: readonly string[],
  options: { keyTtlMs: number; startedAt: number },
) {
  const nemesis = events.filter((e): e is NemesisEvent => e.type === 'nemesis');
  const { fired, injected, injectedStarts, bit } = faultsThatBit(nemesis, snapshot);
  const client = events.filter((e): e is ClientEvent => 'op' in e);
  const completions = client.filter((e) => e.type !== 'invoke');
  const keysWithPayment = new Set(
    snapshot.payments.map((p) => tupleKey(p.tenantId, p.idempotencyKey)),
  );
  const lost = completions.filter((e) => e.lostResponse);
  // Late duplicates sent more than the key TTL after the intent's first request.
  const firstInvoke = new Map<string, number>();
  for (const e of client)
    if (e.type === 'invoke' && !firstInvoke.has(e.intent)) firstInvoke.set(e.intent, e.at);
  const challenges = client.filter((e) => e.f === 'challenge' && e.type === 'ok');
  const requests = { ok: 0, fail: 0, info: 0 };
  for (const e of completions) if (e.f !== 'status') requests[e.type as 'ok' | 'fail' | 'info']++;
  return {
    fired,
    injected,
    // Reads of a lagging object answered 404: a lag still running at the heal is cleared with
    // the other faults, so a late `not_found` may bite its charge and never a read.
    laggedReadsAnswered404: snapshot.faultUses?.byKind.not_found ?? 0,
    // Pauses that stopped a worker inside a job, before its processor call: reported, not required.
    pausesInsideJob: count(
      nemesis,
      (e) => e.phase === 'end' && e.kind === 'pause_worker' && (e.bit ?? 0) > 0,
    ),
    killsInAmbiguityWindow: killsInAmbiguityWindow(injectedStarts, snapshot, options.startedAt),
    // Lost answers, and those whose request had committed (its key has a payment).
    lostResponses: lost.length,
    lostResponsesCommitted: count(lost, (e) => keysWithPayment.has(tupleKey(e.tenantId, e.key))),
    // Counters only the system can tell: takeovers, stalled workers refused at their first
    // write, reconciler reads of a recorded intent answered 404.
    leaseTakeovers: snapshot.counters.lease_takeovers ?? 0,
    staleWorkersFenced: snapshot.counters.stale_workers_fenced ?? 0,
    unreadableIntentsReconciled: snapshot.counters.unreadable_intents_reconciled ?? 0,
    expiriesCrossed: count(
      completions,
      (e) => e.f === 'late' && e.at - (firstInvoke.get(e.intent) ?? e.at) > options.keyTtlMs,
    ),
    replaysServed: count(completions, (e) => e.replayed),
    charges: count(snapshot.ledger, (l) => l.kind === 'charge'),
    requests,
    browserCustomersPaying: browserCustomersPaying(events),
    // Fault kinds the profile names that never fired (a ci run with any fails).
    neverFired: faults.filter((k) => !fired[k]),
    money: moneyCoverage(client.filter(isOperatorRequest), injectedStarts, snapshot, bit),
    threeDSecure: {
      // Challenges answered (the processor took it) or left.
      met: challenges.length,
      completed: count(challenges, (e) => e.answer === 'complete'),
      failed: count(challenges, (e) => e.answer === 'fail'),
      left: count(challenges, (e) => e.answer === 'leave'),
      redirectsLost: count(challenges, (e) => e.lostResponse),
      canceled: count(snapshot.payments, (p) => p.status === 'canceled'),
    },
  };
}

/** Faults injected per kind, and those that bit (armed is not fired: the processor must use it). */
function faultsThatBit(nemesis: readonly NemesisEvent[], snapshot: Snapshot) {
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
    if (isArmedFault(e.kind)) return (end?.faultId ? (uses.byId[end.faultId] ?? 0) : 0) > 0;
    return true;
  };
  const injectedStarts = nemesis.filter((e) => e.phase === 'start' && !failedIds.has(e.id));
  for (const e of injectedStarts) {
    injected[e.kind] = (injected[e.kind] ?? 0) + 1;
    if (bit(e)) fired[e.kind] = (fired[e.kind] ?? 0) + 1;
  }
  return { fired, injected, injectedStarts, bit };
}

/**
 * Disruptive faults inside the window between a charge at the processor and the app recording
 * it: the charge is booked, the payment still changed later.
 */
function killsInAmbiguityWindow(
  injectedStarts: readonly NemesisEvent[],
  snapshot: Snapshot,
  startedAt: number,
): number {
  const recordedAt = new Map(
    snapshot.payments.map((p) => [tupleKey(p.tenantId, p.id), p.updatedAt - startedAt]),
  );
  return count(
    injectedStarts.filter((e) => /^(kill_|pause_|pg_)/.test(e.kind)),
    (fault) =>
      snapshot.ledger.some((l) => {
        if (l.kind !== 'charge') return false;
        const recorded = recordedAt.get(tupleKey(l.tenantId, l.paymentId));
        return (
          l.createdAt - startedAt <= fault.at && (recorded === undefined || recorded >= fault.at)
        );
      }),
  );
}

/** The operator's money flows, from the app's database and the history. */
function moneyCoverage(
  operator: readonly ClientEvent[],
  injectedStarts: readonly NemesisEvent[],
  snapshot: Snapshot,
  bit: (e: NemesisEvent) => boolean,
) {
  const invokesPerKey = groupBy(
    operator.filter((e) => e.type === 'invoke'),
    (e) => e.key,
  );
  const withStatus = (status: string) => count(snapshot.payments, (p) => p.status === status);
  return {
    authorized: withStatus('authorized'),
    captured: withStatus('captured'),
    voided: withStatus('voided'),
    refundsSucceeded: count(snapshot.refunds ?? [], (r) => r.status === 'succeeded'),
    refundsRefused: count(
      operator,
      (e) => e.f === 'refund' && e.type === 'fail' && e.status === 400,
    ),
    // Two invokes of one key in the same millisecond-ish burst: a double-click.
    doubleClicks: count(
      [...invokesPerKey.values()],
      (sent) => sent.length > 1 && sent[1]!.at - sent[0]!.at < 50,
    ),
    lostAnswers: count(operator, (e) => e.lostResponse),
    // Faults aimed at a capture or a refund (`m…` ids) that bit.
    faultsBit: count(injectedStarts, (e) => e.id.startsWith('m') && bit(e)),
    // Rude operators (`RudePlan`): races run and lost, keys of another operation refused 422,
    // signed-out sessions refused 401, requests over REST or GraphQL under a tRPC key.
    rude: {
      races: new Set(operator.filter((e) => e.race).map((e) => tupleKey(e.tenantId, e.paymentId)))
        .size,
      racesLost: count(operator, (e) => e.race && e.type === 'fail'),
      keyReuseRefused: count(
        operator,
        (e) => e.type === 'fail' && e.status === 422 && e.error === 'idempotency_key_reused',
      ),
      revokedRefused: count(
        operator,
        (e) => e.revokedSession && e.type === 'fail' && e.status === 401,
      ),
      acrossTransports: count(operator, (e) => e.type !== 'invoke' && e.transport),
    },
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
