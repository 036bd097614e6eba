import {
  type AppPayment,
  type AppRefund,
  achieved,
  checkHistory,
  History,
  type IntentFacts,
  type LedgerEntry,
  measureCoverage,
  planRun,
  type Snapshot,
  shortfalls,
} from '@once/chaos';
import { expect, test } from '@playwright/test';
import { onceCatalogues } from '../chaos/once-target.ts';
import { PROFILES, parseChaosArgs, replayCommand } from '../chaos/profiles.ts';

/**
 * The checker on hand-written histories: each bad history must produce exactly the
 * violation it stages, and the good one none. No system runs here.
 */
const T0 = 1_700_000_000_000;
const intent: IntentFacts = { id: 'i1', tenantId: 'tenant_a', amount: 4599, declinedCard: false };

function payment(over: Partial<AppPayment> = {}): AppPayment {
  return {
    tenantId: 'tenant_a',
    id: 'pay_1',
    status: 'succeeded',
    amount: 4599,
    idempotencyKey: 'k1',
    createdAt: T0 + 100,
    updatedAt: T0 + 500,
    ...over,
  };
}

function charge(over: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    kind: 'charge',
    accountId: 'acct_tenant_a',
    tenantId: 'tenant_a',
    paymentId: 'pay_1',
    amount: 4599,
    paymentIntentId: 'pi_1',
    createdAt: T0 + 300,
    ...over,
  };
}

function snapshot(payments: AppPayment[], ledger: LedgerEntry[]): Snapshot {
  return { payments, ledger, backstage: [], counters: {} };
}

/** A history in which intent i1 paid with key k1 and saw `shown` in the end. */
function historyOf(answers: ('ok' | 'fail' | 'info')[], shown?: string, failStatus = 409): History {
  let now = T0;
  const history = new History(() => now);
  for (const type of answers) {
    now += 10;
    const complete = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'k1',
      process: 'client-rest',
      f: 'pay',
    });
    now += 10;
    complete(
      type,
      type === 'ok'
        ? { status: 201, paymentId: 'pay_1' }
        : { status: type === 'fail' ? failStatus : 0 },
    );
  }
  if (shown) {
    const complete = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'k1',
      process: 'client-rest',
      f: 'status',
    });
    now += 10;
    complete('ok', { paymentId: 'pay_1', state: shown });
  }
  return history;
}

const check = (history: History, snap: Snapshot, intents = [intent]) =>
  checkHistory({
    intents,
    events: history.events,
    snapshot: snap,
    healAt: 0,
    startedAt: T0,
  }).violations.map((v) => v.kind);

test('a clean history with one charge per payment has no violation', () => {
  expect(check(historyOf(['info', 'ok'], 'succeeded'), snapshot([payment()], [charge()]))).toEqual(
    [],
  );
});

test('two charges for one payment are a double charge', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    snapshot([payment()], [charge(), charge({ paymentIntentId: 'pi_2' })]),
  );
  expect(kinds).toContain('double_charge');
  expect(kinds).toContain('shown_disagrees_with_ledger');
  expect(kinds).toContain('money_not_conserved');
});

test('two payments for one (tenant, key) are a duplicate payment', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    snapshot([payment(), payment({ id: 'pay_2', status: 'declined' })], [charge()]),
  );
  expect(kinds).toEqual(['duplicate_payment']);
});

test('a payment left processing after the heal is not terminal', () => {
  expect(check(historyOf(['ok']), snapshot([payment({ status: 'processing' })], []))).toEqual([
    'not_terminal',
  ]);
});

test('an ok answer without any payment is a missing payment', () => {
  expect(check(historyOf(['ok']), snapshot([], []))).toEqual(['missing_payment']);
});

test('an intent refused every time must not be charged', () => {
  const kinds = check(historyOf(['fail', 'fail']), snapshot([payment()], [charge()]));
  expect(kinds).toEqual(['charged_after_refusals']);
});

test('the client shown "declined" while the ledger holds a charge disagrees', () => {
  const kinds = check(
    historyOf(['ok'], 'declined'),
    snapshot([payment({ status: 'declined' })], [charge()]),
  );
  expect(kinds).toContain('shown_disagrees_with_ledger');
  expect(kinds).toContain('state_disagrees_with_ledger');
});

test('a succeeded payment without a charge disagrees with the ledger', () => {
  expect(check(historyOf(['ok'], 'succeeded'), snapshot([payment()], []))).toEqual([
    'state_disagrees_with_ledger',
    'shown_disagrees_with_ledger',
    'money_not_conserved',
  ]);
});

test('a charge of the wrong amount, and a cart priced for another cart, are caught', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    snapshot([payment({ amount: 9198 })], [charge()]),
  );
  expect(kinds).toContain('wrong_amount');
});

test('another cart sent with the same key is a legitimate payment only if that request may have run', () => {
  const withReuse = (type: 'ok' | 'fail') => {
    let now = T0;
    const history = new History(() => now);
    const first = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'k1',
      process: 'client-rest',
      f: 'pay',
    });
    now += 10;
    first('info', { error: 'client_timeout' });
    const reuse = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'k1',
      process: 'client-rest',
      f: 'reuse',
    });
    now += 10;
    reuse(type, type === 'ok' ? { paymentId: 'pay_1', status: 201 } : { status: 422 });
    return history;
  };
  const snap = snapshot([payment({ amount: 9198 })], [charge({ amount: 9198 })]);
  const facts = [{ ...intent, reuseAmount: 9198 }];
  expect(check(withReuse('ok'), snap, facts)).toEqual([]);
  // The first request refused (503), the other cart accepted and charged: not "charged after refusals".
  const refusedThenReused = withReuse('ok');
  const first = refusedThenReused.events.find(
    (e) => 'op' in e && e.op === 1 && e.type !== 'invoke',
  );
  if (first && 'op' in first) Object.assign(first, { type: 'fail', status: 503 });
  expect(check(refusedThenReused, snap, facts)).toEqual([]);
  expect(check(withReuse('fail'), snap, facts)).toEqual(['wrong_amount']);
});

test('a 422 "key reused" for the only cart a client sent is a wrong refusal', () => {
  expect(check(historyOf(['fail'], undefined, 422), snapshot([], []))).toEqual(['wrongly_refused']);
  expect(check(historyOf(['fail'], undefined, 409), snapshot([], []))).toEqual([]);
});

test('a charge no payment of the app names is caught', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    snapshot([payment()], [charge(), charge({ paymentId: 'pay_x', paymentIntentId: 'pi_x' })]),
  );
  expect(kinds).toContain('charge_without_payment');
});

test('a declined test card that ends succeeded is caught', () => {
  const kinds = check(historyOf(['ok'], 'succeeded'), snapshot([payment()], [charge()]), [
    { ...intent, declinedCard: true },
  ]);
  expect(kinds).toEqual(['declined_card_charged']);
});

test('a process that died without the nemesis is a violation', () => {
  const history = historyOf(['ok'], 'succeeded');
  history.lifecycle({ process: 'worker-1', event: 'exited', detail: 'exit code 1' });
  expect(check(history, snapshot([payment()], [charge()]))).toEqual(['process_died']);
});

test('a refund that undoes a double charge restores the balance', () => {
  const refund = charge({ kind: 'refund', paymentIntentId: 'pi_2' });
  expect(
    check(
      historyOf(['ok'], 'succeeded'),
      snapshot([payment()], [charge(), charge({ paymentIntentId: 'pi_2' }), refund]),
    ),
  ).toEqual([]);
});

/** Intent i1's requests, each with its own key (a client that wrongly made a new key per try). */
function keysHistory(
  requests: { key: string; type: 'ok' | 'fail' | 'info'; paymentId?: string }[],
): History {
  let now = T0;
  const history = new History(() => now);
  for (const r of requests) {
    now += 10;
    const complete = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: r.key,
      process: 'client-browser',
      f: 'pay',
    });
    now += 10;
    complete(r.type, r.type === 'ok' ? { status: 201, paymentId: r.paymentId } : { status: 0 });
  }
  return history;
}

const violationsOf = (history: History, snap: Snapshot) =>
  checkHistory({
    intents: [intent],
    events: history.events,
    snapshot: snap,
    healAt: 0,
    startedAt: T0,
  }).violations;

// One intent paid under two keys: per key one payment, per payment one charge, money
// conserved. Only the per-intent rules see it (the bug `ui-new-key-on-retry` plants).
test('one intent answered with two different payments is a duplicate payment (the per-intent rule alone)', () => {
  const history = keysHistory([
    { key: 'k1', type: 'ok', paymentId: 'pay_1' },
    { key: 'k2', type: 'ok', paymentId: 'pay_2' },
  ]);
  // The second payment was declined: one charge in all, so only the answers show it.
  const snap = snapshot(
    [payment(), payment({ id: 'pay_2', idempotencyKey: 'k2', status: 'declined' })],
    [charge()],
  );
  const violations = violationsOf(history, snap);
  expect(violations.map((v) => v.kind)).toEqual(['duplicate_payment']);
  // Reported on the intent, not on either payment (no per-payment rule fired).
  expect(violations[0]!.intent).toBe('i1');
  expect(violations[0]!.paymentId).toBeUndefined();
  expect(violations[0]!.detail).toMatch(/one intent was answered with 2 different payments/);
});

test('charges spread over two payments of one intent are a double charge (the per-intent rule alone)', () => {
  // The client heard only of pay_1; its other key's request timed out, yet made pay_2.
  const history = keysHistory([
    { key: 'k1', type: 'ok', paymentId: 'pay_1' },
    { key: 'k2', type: 'info' },
  ]);
  const snap = snapshot(
    [payment(), payment({ id: 'pay_2', idempotencyKey: 'k2' })],
    [charge(), charge({ paymentId: 'pay_2', paymentIntentId: 'pi_2' })],
  );
  const violations = violationsOf(history, snap);
  expect(violations.map((v) => v.kind)).toEqual(['double_charge']);
  // Reported on the intent, not on either payment (no per-payment rule fired).
  expect(violations[0]!.intent).toBe('i1');
  expect(violations[0]!.paymentId).toBeUndefined();
  expect(violations[0]!.detail).toMatch(/2 charges across 2 payments of one intent/);
});

test('the schedule is a pure function of the seed', () => {
  const options = {
    workerNames: ['worker-1', 'worker-2'],
    leaseMs: 3000,
    processorTimeoutMs: 4000,
    reconcileAfterMs: 4000,
  };
  const a = planRun(42, PROFILES.ci!, onceCatalogues, options);
  const b = planRun(42, PROFILES.ci!, onceCatalogues, options);
  const c = planRun(43, PROFILES.ci!, onceCatalogues, options);
  expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  expect(JSON.stringify(a)).not.toBe(JSON.stringify(c));
  expect(a.intents.length).toBeGreaterThanOrEqual(120);
  expect(a.intents.filter((i) => i.transport === 'browser').length).toBeGreaterThanOrEqual(20);
  expect(a.nemesis.length).toBeGreaterThanOrEqual(30);
  expect(new Set(a.nemesis.map((n) => n.kind)).size).toBe(PROFILES.ci!.faults.length);
});

test('the schedule reaches the planted bugs: shared keys within the TTL, pauses past the key retention', () => {
  const options = {
    workerNames: ['worker-1', 'worker-2'],
    leaseMs: 3000,
    processorTimeoutMs: 4000,
    reconcileAfterMs: 4000,
    processorKeyForgetMs: 15_000,
  };
  const ttlMs = Number(PROFILES.ci!.env.ONCE_CHECKOUT_KEY_TTL_MS);
  for (const seed of [1, 2, 3]) {
    const plan = planRun(seed, PROFILES.ci!, onceCatalogues, options);
    // Two tenants' clients that chose the same key start while the first one's record lives.
    const byKey = new Map<string, (typeof plan.intents)[number][]>();
    for (const i of plan.intents) byKey.set(i.key, [...(byKey.get(i.key) ?? []), i]);
    const shared = [...byKey.values()].filter((list) => list.length > 1);
    expect(shared.length, `seed ${seed}`).toBeGreaterThan(0);
    for (const list of shared) {
      expect(new Set(list.map((i) => i.tenantId)).size).toBe(list.length);
      const starts = list.map((i) => i.startAtMs);
      expect(Math.max(...starts) - Math.min(...starts)).toBeLessThan(ttlMs * list.length);
    }
    // Every pause outlasts the lease; some outlast the processor's key retention too.
    const pauses = plan.nemesis.filter((n) => n.kind === 'pause_worker');
    expect(pauses.every((p) => p.downMs > options.leaseMs)).toBe(true);
    expect(pauses.some((p) => p.downMs > options.processorKeyForgetMs)).toBe(true);
    // Browser customers who reload mid-payment (a new page must keep the key).
    expect(plan.intents.filter((i) => i.reloadMidPayment).length).toBeGreaterThanOrEqual(5);
  }
});

test('the command line: overrides, the replay command, clear errors', () => {
  const args = parseChaosArgs([
    '--seed',
    '7',
    '--profile',
    'ci',
    '--intents',
    '40',
    '--faults',
    'kill_web,delay',
  ]);
  expect(args.profile.intents).toBe(40);
  expect(replayCommand(args)).toBe(
    'npm run chaos -- --seed 7 --profile ci --intents 40 --faults kill_web,delay',
  );
  expect(() => parseChaosArgs(['--faults', 'meteor'])).toThrow(/unknown fault meteor/);
  expect(() => parseChaosArgs(['--profile', 'huge'])).toThrow(/unknown profile huge/);
  expect(() => parseChaosArgs(['--seed', '-1'])).toThrow(/non-negative integer/);
});

test('coverage counts fired faults and lists the kinds that never fired', () => {
  const history = historyOf(['ok'], 'succeeded');
  history.nemesis({ phase: 'start', id: 'n1', kind: 'kill_web', target: 'web' });
  history.nemesis({ phase: 'end', id: 'n1', kind: 'kill_web', target: 'web' });
  history.nemesis({ phase: 'start', id: 'n2', kind: 'delay', target: 'processor' });
  history.nemesis({
    phase: 'end',
    id: 'n2',
    kind: 'delay',
    target: 'processor',
    detail: 'not injected: down',
  });
  const coverage = measureCoverage(
    history.events,
    snapshot([payment()], [charge()]),
    ['kill_web', 'delay'],
    { keyTtlMs: 1000, startedAt: T0 },
  );
  expect(coverage.fired).toEqual({ kill_web: 1 });
  expect(coverage.neverFired).toEqual(['delay']);
});

test('a fault counts as fired when it bit: a processor fault by its consumption, a storm by its terminations', () => {
  const history = historyOf(['ok'], 'succeeded');
  const armed = (id: string, kind: string, faultId: string) => {
    history.nemesis({ phase: 'start', id, kind, target: 'processor' });
    history.nemesis({ phase: 'end', id, kind, target: 'processor', faultId });
  };
  armed('n1', 'fail_after_charge', 'fault_bit');
  armed('n2', 'delay', 'fault_idle');
  armed('n3', 'not_found', 'fault_lag');
  history.nemesis({ phase: 'start', id: 'n4', kind: 'pg_terminate_storm', target: 'postgres' });
  history.nemesis({
    phase: 'end',
    id: 'n4',
    kind: 'pg_terminate_storm',
    target: 'postgres',
    bit: 0,
  });
  history.nemesis({ phase: 'start', id: 'n5', kind: 'pg_terminate_storm', target: 'postgres' });
  history.nemesis({
    phase: 'end',
    id: 'n5',
    kind: 'pg_terminate_storm',
    target: 'postgres',
    bit: 3,
  });
  // A pause that stopped an idle worker (no job): injected, counted apart from those inside a job.
  history.nemesis({ phase: 'start', id: 'n6', kind: 'pause_worker', target: 'worker-1' });
  history.nemesis({ phase: 'end', id: 'n6', kind: 'pause_worker', target: 'worker-1', bit: 0 });
  const snap: Snapshot = {
    ...snapshot([payment()], [charge()]),
    faultUses: { byId: { fault_bit: 1, fault_idle: 0, fault_lag: 1 }, byKind: {} },
  };
  const kinds = [
    'fail_after_charge',
    'delay',
    'not_found',
    'pg_terminate_storm',
    'pause_worker',
  ] as const;
  const coverage = measureCoverage(history.events, snap, kinds, { keyTtlMs: 1000, startedAt: T0 });
  expect(coverage.injected).toEqual({
    fail_after_charge: 1,
    delay: 1,
    not_found: 1,
    pg_terminate_storm: 2,
    pause_worker: 1,
  });
  // Armed, never matched: not fired. A storm that terminated nobody: not fired.
  expect(coverage.fired).toEqual({
    fail_after_charge: 1,
    not_found: 1,
    pg_terminate_storm: 1,
    pause_worker: 1,
  });
  expect(coverage.neverFired).toEqual(['delay']);
  expect(coverage.laggedReadsAnswered404).toBe(0);
  expect(coverage.pausesInsideJob).toBe(0);
  // A snapshot without consumption (a target that cannot tell) fires no processor fault.
  expect(
    measureCoverage(history.events, snapshot([payment()], [charge()]), kinds, {
      keyTtlMs: 1000,
      startedAt: T0,
    }).neverFired,
  ).toEqual(['fail_after_charge', 'delay', 'not_found']);
});

test('a run that did no work fails the ci floors, and a crashed client fails any run', () => {
  const floors = PROFILES.ci!.floors!;
  expect(Object.keys(floors).sort()).toEqual(
    [
      'browserStarted',
      'browserWithPayment',
      'captures',
      'expiriesCrossed',
      'intentsWithPayment',
      'killsInAmbiguityWindow',
      'leaseTakeovers',
      'lostResponsesCommitted',
      'refunds',
      'requestsOk',
      'threeDSecure',
    ].sort(),
  );
  // The target promises >= 20 browser customers.
  expect(floors.browserStarted).toBeGreaterThanOrEqual(20);
  // Zero traffic: no client request at all, the nemesis alone.
  const idle = new History(() => T0);
  const coverage = measureCoverage(idle.events, snapshot([], []), [], {
    keyTtlMs: 1000,
    startedAt: T0,
  });
  const nothing = achieved(coverage, {
    withPayment: 0,
    browserWithPayment: 0,
  });
  expect(
    shortfalls(nothing, floors, [])
      .map((s) => s.split(' ')[0])
      .sort(),
  ).toEqual(Object.keys(floors).sort());
  // Exactly at every floor: nothing short.
  expect(shortfalls({ ...nothing, ...floors }, floors, [])).toEqual([]);
  expect(shortfalls({ ...nothing, ...floors }, floors, ['client i7 crashed: TypeError'])).toEqual([
    '1 client(s) crashed: client i7 crashed: TypeError',
  ]);
  // A resized profile is not held to the ci floors; crashes still count there.
  expect(parseChaosArgs(['--profile', 'ci', '--intents', '10']).profile.floors).toBeUndefined();
});

// The operator's money flows: captures, voids and refunds against both databases.

function appRefund(over: Partial<AppRefund> = {}): AppRefund {
  return {
    tenantId: 'tenant_a',
    id: 'rf_1',
    paymentId: 'pay_1',
    amount: 1000,
    status: 'succeeded',
    downstreamKey: 'once_refund_rf_1',
    processorRefundId: 're_1',
    ...over,
  };
}

function ledgerRefund(over: Partial<LedgerEntry> = {}): LedgerEntry {
  return charge({
    kind: 'refund',
    amount: 1000,
    idempotencyKey: 'once_refund_rf_1',
    refundId: 're_1',
    ...over,
  });
}

const withRefunds = (payments: AppPayment[], ledger: LedgerEntry[], refunds: AppRefund[]) => ({
  ...snapshot(payments, ledger),
  refunds,
});

/** Intent i1 paid and was shown succeeded; then its operator's refunds were answered ok. */
function refundHistory(answers: [key: string, refundId: string, refundState: string][]): History {
  const history = new History(() => T0);
  const op = (f: 'pay' | 'status' | 'refund', key: string) =>
    history.invoke({ intent: 'i1', tenantId: 'tenant_a', key, process: 'client-rest', f });
  op('pay', 'k1')('ok', { status: 201, paymentId: 'pay_1' });
  op('status', 'k1')('ok', { paymentId: 'pay_1', state: 'succeeded' });
  for (const [key, refundId, refundState] of answers) {
    op('refund', key)('ok', { status: 200, paymentId: 'pay_1', refundId, refundState });
  }
  return history;
}

test('partial refunds, a failed refund given back, and a partial capture conserve money', () => {
  const snap = withRefunds(
    [
      payment({ amountRefunded: 1000 }),
      payment({
        id: 'pay_2',
        idempotencyKey: 'k2',
        status: 'captured',
        captureMethod: 'manual',
        amountCaptured: 3000,
      }),
    ],
    [
      charge(),
      ledgerRefund(),
      // A refund the processor took, then failed: the money came back (a negative row).
      ledgerRefund({ amount: 500, idempotencyKey: 'once_refund_rf_2', refundId: 're_2' }),
      ledgerRefund({ amount: -500, idempotencyKey: null, refundId: 're_2' }),
      charge({ paymentId: 'pay_2', paymentIntentId: 'pi_2', amount: 3000 }),
    ],
    [
      appRefund(),
      appRefund({
        id: 'rf_2',
        amount: 500,
        status: 'failed',
        downstreamKey: 'once_refund_rf_2',
        processorRefundId: 're_2',
      }),
    ],
  );
  expect(check(refundHistory([['r1', 'rf_1', 'requested']]), snap)).toEqual([]);
});

test('a manual payment captured twice is a double capture', () => {
  const captured = payment({ status: 'captured', captureMethod: 'manual', amountCaptured: 3000 });
  const kinds = check(
    historyOf(['ok'], 'captured'),
    snapshot(
      [captured],
      [charge({ amount: 3000 }), charge({ amount: 3000, paymentIntentId: 'pi_1b' })],
    ),
  );
  expect(kinds).toContain('double_capture');
  expect(kinds).not.toContain('double_charge');
});

test('a client shown "captured" without a capture in the ledger disagrees', () => {
  const captured = payment({ status: 'captured', captureMethod: 'manual', amountCaptured: 3000 });
  expect(check(historyOf(['ok'], 'captured'), snapshot([captured], []))).toContain(
    'shown_disagrees_with_ledger',
  );
  expect(
    check(historyOf(['ok'], 'captured'), snapshot([captured], [charge({ amount: 3000 })])),
  ).toEqual([]);
});

test('an authorised payment holds no charge; a capture the app did not record disagrees', () => {
  const authorized = payment({ status: 'authorized', captureMethod: 'manual' });
  expect(check(historyOf(['ok']), snapshot([authorized], []))).toEqual([]);
  expect(check(historyOf(['ok']), snapshot([authorized], [charge()]))).toEqual([
    'state_disagrees_with_ledger',
    'money_not_conserved',
  ]);
});

test('refunds over what was received are an over-refund', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    withRefunds(
      [payment({ amountRefunded: 5000 })],
      [charge(), ledgerRefund({ amount: 5000 })],
      [appRefund({ amount: 5000 })],
    ),
  );
  expect(kinds).toContain('over_refund');
});

test('one refund key booked twice at the processor is a double refund', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    withRefunds(
      [payment({ amountRefunded: 1000 })],
      [charge(), ledgerRefund(), ledgerRefund({ refundId: 're_1b' })],
      [appRefund()],
    ),
  );
  expect(kinds).toContain('double_refund');
  expect(kinds).toContain('money_not_conserved');
});

test('a refund sent twice without its key (money back beyond the app refunds) is a double refund', () => {
  const kinds = check(
    historyOf(['ok'], 'succeeded'),
    withRefunds(
      [payment({ amountRefunded: 1000 })],
      [
        charge(),
        ledgerRefund({ idempotencyKey: null, refundId: 're_lost' }),
        ledgerRefund({ idempotencyKey: null }),
      ],
      [appRefund()],
    ),
  );
  expect(kinds).toEqual(['double_refund', 'money_not_conserved']);
});

test('one operator refund key answered with two refunds is a double refund', () => {
  const snap = withRefunds(
    [payment({ amountRefunded: 2000 })],
    [
      charge(),
      ledgerRefund(),
      ledgerRefund({ idempotencyKey: 'once_refund_rf_2', refundId: 're_2' }),
    ],
    [
      appRefund(),
      appRefund({ id: 'rf_2', downstreamKey: 'once_refund_rf_2', processorRefundId: 're_2' }),
    ],
  );
  const twice = refundHistory([
    ['r1', 'rf_1', 'requested'],
    ['r1', 'rf_2', 'requested'],
  ]);
  expect(check(twice, snap)).toEqual(['double_refund']);
  const once = refundHistory([
    ['r1', 'rf_1', 'requested'],
    ['r2', 'rf_2', 'requested'],
  ]);
  expect(check(once, snap)).toEqual([]);
});

test('an operator key accepted, then refused for its own effect, is wrongly refused', () => {
  const snap = withRefunds(
    [payment({ amountRefunded: 1000 })],
    [charge(), ledgerRefund()],
    [appRefund()],
  );
  const history = refundHistory([['r1', 'rf_1', 'requested']]);
  const pressed = (error: string, status: number) =>
    history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'r1',
      process: 'client-operator',
      f: 'refund',
    })('fail', { status, paymentId: 'pay_1', error });
  pressed('idempotency_key_in_use', 409); // the other press still running: retried, fine
  expect(check(history, snap)).toEqual([]);
  pressed('refund_amount_too_large', 409);
  expect(check(history, snap)).toEqual(['wrongly_refused']);
});

test("a refund's state, and what its client was shown, agree with the ledger", () => {
  const failedButKept = withRefunds(
    [payment()],
    [charge(), ledgerRefund()],
    [appRefund({ status: 'failed' })],
  );
  expect(check(refundHistory([['r1', 'rf_1', 'requested']]), failedButKept)).toContain(
    'state_disagrees_with_ledger',
  );
  const notBooked = withRefunds(
    [payment({ amountRefunded: 1000 })],
    [charge()],
    [appRefund({ processorRefundId: null })],
  );
  const kinds = check(refundHistory([['r1', 'rf_1', 'succeeded']]), notBooked);
  expect(kinds).toContain('shown_disagrees_with_ledger');
  expect(kinds).toContain('state_disagrees_with_ledger');
});

test('a refund left unanswered after the heal is not terminal', () => {
  expect(
    check(
      refundHistory([['r1', 'rf_1', 'requested']]),
      withRefunds(
        [payment()],
        [charge()],
        [appRefund({ status: 'unknown', processorRefundId: null })],
      ),
    ),
  ).toEqual(['not_terminal']);
});

test('the money flows add captures, voids, expiries, refunds and their faults, and leave the charge schedule as it was', () => {
  const options = {
    workerNames: ['worker-1', 'worker-2'],
    leaseMs: 3000,
    processorTimeoutMs: 4000,
    reconcileAfterMs: 4000,
  };
  const ci = PROFILES.ci!;
  const noMoney = { ...ci, moneyFlows: { manualShare: 0, refundShare: 0, faults: 0 } };
  for (const seed of [1, 2]) {
    const plan = planRun(seed, ci, onceCatalogues, options);
    const flows = new Set(plan.intents.map((i) => i.flow));
    expect([...flows].sort(), `seed ${seed}`).toEqual(['capture', 'charge', 'expire', 'void']);
    const refunds = plan.intents.flatMap((i) => i.refunds);
    expect(refunds.length).toBeGreaterThanOrEqual(10);
    expect(plan.intents.some((i) => i.refunds.length > 1)).toBe(true);
    expect(refunds.some((r) => r.submits === 2)).toBe(true);
    expect(refunds.some((r) => r.loseFirstResponse)).toBe(true);
    expect(plan.intents.some((i) => i.operatorAction?.amount !== undefined)).toBe(true);
    expect(
      plan.intents.every(
        (i) => i.transport !== 'browser' || (i.flow === 'charge' && !i.refunds.length),
      ),
    ).toBe(true);
    const aimed = plan.nemesis.filter((n) => n.operation);
    expect(new Set(aimed.map((n) => n.operation))).toEqual(
      new Set(['payment_intents.capture', 'refunds.create']),
    );
    // Everything else is the plan the seed made before money flows (and 3-D Secure, which
    // `chaos-three-d-secure.spec.ts` checks on its own) existed.
    const before = planRun(seed, noMoney, onceCatalogues, options);
    const chargeOnly = (i: (typeof plan.intents)[number]) => {
      const { flow: _f, operatorAction: _a, refunds: _r, challenge: _c, rude: _u, ...rest } = i;
      return rest;
    };
    expect(plan.intents.map(chargeOnly)).toEqual(before.intents.map(chargeOnly));
    expect(plan.nemesis.filter((n) => !n.operation)).toEqual(before.nemesis);
  }
});

// Every branch of every check, alone: one history each that this branch, and no other branch
// reporting the same kind, catches. A check whose branches share a kind (over_refund at the
// processor and in the app, double_refund three ways, money_not_conserved per payment and per
// tenant) passed its tests with one branch switched off while another still fired; here each
// case names the branch by its detail, so switching any branch off fails its case.

interface BranchCase {
  /** The branch, as the case's title says it. */
  branch: string;
  kind: string;
  /** What only this branch writes in its detail. */
  detail: RegExp;
  history: History;
  snapshot: Snapshot;
  intents?: IntentFacts[];
}

/** Intent i1 paid pay_1 and was shown `shown`; then each operator event, in order. */
function operatorHistory(
  shown: string,
  events: {
    f: 'refund' | 'capture' | 'void' | 'status' | 'challenge';
    key: string;
    type: 'ok' | 'fail';
    detail?: Partial<import('@once/chaos').ClientEvent>;
  }[],
): History {
  let now = T0;
  const history = new History(() => (now += 10));
  const op = (f: 'pay' | 'status' | 'refund' | 'capture' | 'void' | 'challenge', key: string) =>
    history.invoke({ intent: 'i1', tenantId: 'tenant_a', key, process: 'client-rest', f });
  op('pay', 'k1')('ok', { status: 201, paymentId: 'pay_1' });
  op('status', 'k1')('ok', { paymentId: 'pay_1', state: shown });
  for (const e of events) op(e.f, e.key)(e.type, { paymentId: 'pay_1', ...e.detail });
  return history;
}

const BRANCHES: BranchCase[] = [
  // checker.ts
  {
    branch: 'two payments under one (tenant, key)',
    kind: 'duplicate_payment',
    detail: /^2 payments for key k1/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot([payment(), payment({ id: 'pay_2', status: 'declined' })], [charge()]),
  },
  {
    branch: 'two charges of one automatic payment',
    kind: 'double_charge',
    detail: /^2 charges at the processor/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot([payment()], [charge(), charge({ paymentIntentId: 'pi_2' })]),
  },
  {
    branch: 'two captures of one manual payment',
    kind: 'double_capture',
    detail: /^2 captures at the processor/,
    history: historyOf(['ok'], 'captured'),
    snapshot: snapshot(
      [payment({ status: 'captured', captureMethod: 'manual', amountCaptured: 3000 })],
      [charge({ amount: 3000 }), charge({ amount: 3000, paymentIntentId: 'pi_1b' })],
    ),
  },
  {
    branch: 'a charge of another amount than its payment',
    kind: 'wrong_amount',
    detail: /^charged 4000, the payment is for 4599/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot([payment()], [charge({ amount: 4000 })]),
  },
  {
    branch: 'a payment priced for another cart than its intent',
    kind: 'wrong_amount',
    detail: /^payment of 9198 for a cart of 4599/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot([payment({ amount: 9198 })], [charge({ amount: 9198 })]),
  },
  {
    branch: "a settled payment's state against its charges",
    kind: 'state_disagrees_with_ledger',
    detail: /^payment authorized, the ledger holds 1 charge/,
    history: historyOf(['ok']),
    snapshot: snapshot([payment({ status: 'authorized', captureMethod: 'manual' })], [charge()]),
  },
  {
    branch: 'a payment left in flight after the heal',
    kind: 'not_terminal',
    detail: /^payment still processing after the heal/,
    history: historyOf(['ok']),
    snapshot: snapshot([payment({ status: 'processing' })], []),
  },
  {
    branch: 'a charge no payment names',
    kind: 'charge_without_payment',
    detail: /names no payment of the app/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot(
      [payment()],
      [charge(), charge({ paymentId: 'pay_x', paymentIntentId: 'pi_x', amount: 100 })],
    ),
  },
  {
    branch: 'an ok answer without a payment',
    kind: 'missing_payment',
    detail: /^answered ok/,
    history: historyOf(['ok']),
    snapshot: snapshot([], []),
  },
  {
    branch: 'a charge after nothing but refusals',
    kind: 'charged_after_refusals',
    detail: /^every answer was a refusal/,
    history: historyOf(['fail', 'fail']),
    snapshot: snapshot([payment()], [charge()]),
  },
  {
    branch: "a checkout's one cart refused as key reused",
    kind: 'wrongly_refused',
    detail: /only ever sent one cart with its key/,
    history: historyOf(['fail'], undefined, 422),
    snapshot: snapshot([], []),
  },
  {
    branch: 'one intent answered with two payments',
    kind: 'duplicate_payment',
    detail: /^one intent was answered with 2 different payments/,
    history: keysHistory([
      { key: 'k1', type: 'ok', paymentId: 'pay_1' },
      { key: 'k2', type: 'ok', paymentId: 'pay_2' },
    ]),
    snapshot: snapshot(
      [payment(), payment({ id: 'pay_2', idempotencyKey: 'k2', status: 'declined' })],
      [charge()],
    ),
  },
  {
    branch: "charges spread over one intent's payments",
    kind: 'double_charge',
    detail: /^2 charges across 2 payments of one intent/,
    history: keysHistory([
      { key: 'k1', type: 'ok', paymentId: 'pay_1' },
      { key: 'k2', type: 'info' },
    ]),
    snapshot: snapshot(
      [payment(), payment({ id: 'pay_2', idempotencyKey: 'k2' })],
      [charge(), charge({ paymentId: 'pay_2', paymentIntentId: 'pi_2' })],
    ),
  },
  {
    branch: 'a declined card that succeeded',
    kind: 'declined_card_charged',
    detail: /^a declined test card ended succeeded/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot([payment()], [charge()]),
    intents: [{ ...intent, declinedCard: true }],
  },
  {
    branch: "what a checkout's client was shown against the ledger",
    kind: 'shown_disagrees_with_ledger',
    detail: /^the client was shown declined/,
    history: historyOf(['ok'], 'declined'),
    snapshot: snapshot([payment({ status: 'declined' })], [charge()]),
  },
  {
    branch: 'a process that died without the nemesis',
    kind: 'process_died',
    detail: /^worker-1 exited without the nemesis/,
    history: (() => {
      const h = historyOf(['ok'], 'succeeded');
      h.lifecycle({ process: 'worker-1', event: 'exited', detail: 'exit code 1' });
      return h;
    })(),
    snapshot: snapshot([payment()], [charge()]),
  },
  // money-checks.ts
  {
    // rf_2 was answered re_1b (the second booking): the app holds both, so only the key tells.
    branch: 'one refund key booked twice at the processor',
    kind: 'double_refund',
    detail: /^2 refunds at the processor with key once_refund_rf_1/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 2000 })],
      [charge(), ledgerRefund(), ledgerRefund({ refundId: 're_1b' })],
      [
        appRefund(),
        appRefund({ id: 'rf_2', downstreamKey: 'once_refund_rf_2', processorRefundId: 're_1b' }),
      ],
    ),
  },
  {
    branch: 'one operator refund key answered with two refunds',
    kind: 'double_refund',
    detail: /^refund key r1 was answered with 2 refunds/,
    history: refundHistory([
      ['r1', 'rf_1', 'requested'],
      ['r1', 'rf_2', 'requested'],
    ]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 2000 })],
      [
        charge(),
        ledgerRefund(),
        ledgerRefund({ idempotencyKey: 'once_refund_rf_2', refundId: 're_2' }),
      ],
      [
        appRefund(),
        appRefund({ id: 'rf_2', downstreamKey: 'once_refund_rf_2', processorRefundId: 're_2' }),
      ],
    ),
  },
  {
    branch: 'money back beyond the app refunds',
    kind: 'double_refund',
    detail: /^the processor refunded 2000, the app's 1 refund\(s\) hold 1000/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 1000 })],
      [
        charge(),
        ledgerRefund({ idempotencyKey: null, refundId: 're_lost' }),
        ledgerRefund({ idempotencyKey: null }),
      ],
      [appRefund()],
    ),
  },
  {
    branch: 'an operator key accepted, then refused for its own effect',
    kind: 'wrongly_refused',
    detail: /^refund key r1 was accepted at/,
    history: operatorHistory('succeeded', [
      {
        f: 'refund',
        key: 'r1',
        type: 'ok',
        detail: { status: 200, refundId: 'rf_1', refundState: 'requested' },
      },
      {
        f: 'refund',
        key: 'r1',
        type: 'fail',
        detail: { status: 409, error: 'refund_amount_too_large' },
      },
    ]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 1000 })],
      [charge(), ledgerRefund()],
      [appRefund()],
    ),
  },
  {
    branch: 'a refund left unanswered after the heal',
    kind: 'not_terminal',
    detail: /^refund rf_1 still unknown after the heal/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds(
      [payment()],
      [charge()],
      [appRefund({ status: 'unknown', processorRefundId: null })],
    ),
  },
  {
    branch: "a refund's state against the ledger",
    kind: 'state_disagrees_with_ledger',
    detail: /^refund rf_1 is failed \(1000\), the ledger keeps 1000/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds(
      [payment()],
      [charge(), ledgerRefund()],
      [appRefund({ status: 'failed' })],
    ),
  },
  {
    // The app's refunds hold no more than the payment received; the processor's charge is short.
    branch: 'the processor refunding more than it charged',
    kind: 'over_refund',
    detail: /^the processor refunded 1000 of 0 it charged/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds([payment({ amountRefunded: 1000 })], [ledgerRefund()], [appRefund()]),
  },
  {
    // The ledger refunded less than it charged; the app holds a refund the processor never took.
    branch: 'the app holding more refunded than the payment received',
    kind: 'over_refund',
    detail: /^the app holds 4000 refunded of 3000 received/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: withRefunds(
      [
        payment({
          status: 'captured',
          captureMethod: 'manual',
          amountCaptured: 3000,
          amountRefunded: 4000,
        }),
      ],
      [charge({ amount: 3000 }), ledgerRefund({ amount: 2000 })],
      [
        appRefund({ amount: 2000 }),
        appRefund({
          id: 'rf_2',
          amount: 2000,
          status: 'pending',
          downstreamKey: 'once_refund_rf_2',
          processorRefundId: null,
        }),
      ],
    ),
  },
  {
    // The app accepted a second whole refund; the processor refused it and the worker recorded
    // the refusal: the books balance now, the acceptance was still wrong.
    branch: 'the app accepting a refund the processor refuses as over what was left',
    kind: 'over_refund',
    detail: /^the app accepted refund rf_2 of 1000; the processor refused it \(amount_too_large\)/,
    history: refundHistory([
      ['r1', 'rf_1', 'requested'],
      ['r2', 'rf_2', 'requested'],
    ]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 1000 })],
      [charge(), ledgerRefund()],
      [
        appRefund(),
        appRefund({
          id: 'rf_2',
          status: 'failed',
          failureCode: 'amount_too_large',
          downstreamKey: 'once_refund_rf_2',
          processorRefundId: null,
        }),
      ],
    ),
  },
  {
    // One payment kept 1000 too much, another 1000 too little: the tenant's sums balance.
    branch: 'money not conserved per payment',
    kind: 'money_not_conserved',
    detail: /^the processor kept \d+ \(charged 4599, refunded (0|1000)\), the payment is owed/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot(
      [payment({ amountRefunded: 1000 }), payment({ id: 'pay_2', idempotencyKey: 'k2' })],
      [
        charge(),
        charge({ paymentId: 'pay_2', paymentIntentId: 'pi_2' }),
        ledgerRefund({ paymentId: 'pay_2', paymentIntentId: 'pi_2', idempotencyKey: null }),
      ],
    ),
  },
  {
    branch: 'money not conserved per tenant (money no payment names)',
    kind: 'money_not_conserved',
    detail: /^the processor took 4099, succeeded payments total 4599/,
    history: historyOf(['ok'], 'succeeded'),
    snapshot: snapshot(
      [payment()],
      [charge(), ledgerRefund({ paymentId: 'pay_x', paymentIntentId: 'pi_x', amount: 500 })],
    ),
  },
  {
    branch: 'what a refund client was shown against the ledger',
    kind: 'shown_disagrees_with_ledger',
    detail: /^the client was shown refund rf_1 succeeded/,
    history: refundHistory([['r1', 'rf_1', 'succeeded']]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 1000 })],
      [charge()],
      [appRefund({ processorRefundId: null })],
    ),
  },
  {
    branch: 'a failed 3-D Secure challenge that charged',
    kind: 'challenge_not_honoured',
    detail: /^the shopper failed the 3-D Secure challenge/,
    history: operatorHistory('succeeded', [
      { f: 'challenge', key: 'k1', type: 'ok', detail: { answer: 'fail' } },
    ]),
    snapshot: snapshot([payment()], [charge()]),
  },
  // Rude operators (checkRudeOperators in money-checks.ts)
  {
    branch: "a capture's key accepted for a refund",
    kind: 'key_reuse_accepted',
    detail: /^key c1 was accepted for capture and refund/,
    history: operatorHistory('succeeded', [
      { f: 'capture', key: 'c1', type: 'ok', detail: { status: 200 } },
      {
        f: 'refund',
        key: 'c1',
        type: 'ok',
        detail: { status: 200, refundId: 'rf_1', refundState: 'requested' },
      },
    ]),
    snapshot: withRefunds(
      [payment({ amountRefunded: 1000 })],
      [charge(), ledgerRefund()],
      [appRefund()],
    ),
  },
  {
    branch: 'a key accepted for one operation while it holds another',
    kind: 'key_reuse_accepted',
    detail: /^key r1 was accepted for refund; it holds a capture/,
    history: refundHistory([['r1', 'rf_1', 'requested']]),
    snapshot: {
      ...withRefunds(
        [payment({ amountRefunded: 1000 })],
        [charge(), ledgerRefund()],
        [appRefund()],
      ),
      moneyActionKeys: [{ tenantId: 'tenant_a', key: 'r1', kind: 'capture', paymentId: 'pay_1' }],
    },
  },
  {
    branch: 'a signed-out session whose request did something',
    kind: 'revoked_session_acted',
    detail:
      /^a refund from a signed-out operator session was answered fail 401, and its key holds a refund/,
    history: operatorHistory('succeeded', [
      {
        f: 'refund',
        key: 'r1-revoked',
        type: 'fail',
        detail: { status: 401, error: 'invalid_credentials', revokedSession: true },
      },
    ]),
    snapshot: {
      ...withRefunds(
        [payment({ amountRefunded: 1000 })],
        [charge(), ledgerRefund()],
        [appRefund()],
      ),
      moneyActionKeys: [
        { tenantId: 'tenant_a', key: 'r1-revoked', kind: 'refund', paymentId: 'pay_1' },
      ],
    },
  },
  {
    branch: 'two racing operators both accepted',
    kind: 'racing_actions_both_accepted',
    detail: /^operators racing on one payment were both accepted: capture c1, void v1/,
    history: operatorHistory('requires_capture', [
      { f: 'capture', key: 'c1', type: 'ok', detail: { status: 200, race: true } },
      { f: 'void', key: 'v1', type: 'ok', detail: { status: 200, race: true } },
    ]),
    snapshot: snapshot(
      [payment({ status: 'captured', captureMethod: 'manual', amountCaptured: 4599 })],
      [charge()],
    ),
  },
];

test('rude operators refused as they must be leave no violation: a race lost, a key of another operation, a signed-out session, one refund on three transports', () => {
  const history = operatorHistory('requires_capture', [
    {
      f: 'capture',
      key: 'c1-revoked',
      type: 'fail',
      detail: { status: 401, error: 'invalid_credentials', revokedSession: true },
    },
    { f: 'capture', key: 'c1', type: 'ok', detail: { status: 200, race: true } },
    {
      f: 'void',
      key: 'v1',
      type: 'fail',
      detail: { status: 409, error: 'payment_action_in_progress', race: true },
    },
    {
      f: 'refund',
      key: 'c1',
      type: 'fail',
      detail: { status: 422, error: 'idempotency_key_reused', amount: 1 },
    },
    { f: 'status', key: 'k1', type: 'ok', detail: { state: 'succeeded' } },
    {
      f: 'refund',
      key: 'r1',
      type: 'ok',
      detail: { status: 200, refundId: 'rf_1', refundState: 'requested' },
    },
    {
      f: 'refund',
      key: 'r1',
      type: 'ok',
      detail: {
        status: 202,
        refundId: 'rf_1',
        refundState: 'requested',
        transport: 'rest',
        replayed: true,
      },
    },
    {
      f: 'refund',
      key: 'r1',
      type: 'fail',
      detail: { status: 409, error: 'idempotency_key_in_use', transport: 'graphql' },
    },
    {
      f: 'refund',
      key: 'r1',
      type: 'ok',
      detail: { status: 200, refundId: 'rf_1', refundState: 'requested', replayed: true },
    },
  ]);
  const snap = {
    ...withRefunds(
      [
        payment({
          status: 'captured',
          captureMethod: 'manual',
          amountCaptured: 4599,
          amountRefunded: 1000,
        }),
      ],
      [charge(), ledgerRefund()],
      [appRefund()],
    ),
    moneyActionKeys: [
      { tenantId: 'tenant_a', key: 'c1', kind: 'capture', paymentId: 'pay_1' },
      { tenantId: 'tenant_a', key: 'r1', kind: 'refund', paymentId: 'pay_1' },
    ],
  };
  expect(check(history, snap)).toEqual([]);
});

for (const c of BRANCHES) {
  test(`${c.kind}: ${c.branch} is caught by that branch alone`, () => {
    const violations = checkHistory({
      intents: c.intents ?? [intent],
      events: c.history.events,
      snapshot: c.snapshot,
      healAt: 0,
      startedAt: T0,
    }).violations;
    const ofKind = violations.filter((v) => v.kind === c.kind);
    expect(ofKind.length, `no ${c.kind}: ${JSON.stringify(violations)}`).toBeGreaterThan(0);
    // Every one of its kind comes from this branch: switched off, the case sees none.
    for (const v of ofKind) expect(v.detail).toMatch(c.detail);
  });
}

test('a browser customer counts as started by what it did (a checkout sent), not by being let in', () => {
  // 28 customers let in: one clicked Pay (its page sent checkout.pay), one found the shop
  // down and left, the rest crashed before their page loaded.
  let now = T0;
  const history = new History(() => (now += 10));
  const browser = (id: string) => ({ intent: id, tenantId: 'tenant_a', process: 'client-browser' });
  history.invoke({ ...browser('b1'), key: 'kb1', f: 'pay' })('ok', {
    status: 200,
    paymentId: 'pay_1',
  });
  history.invoke({ ...browser('b1'), key: 'kb1', f: 'status' })('ok', {
    paymentId: 'pay_1',
    state: 'succeeded',
  });
  history.invoke({ ...browser('b2'), key: '', f: 'status' })('info', {
    error: 'browser: gave up before paying',
  });
  const coverage = measureCoverage(history.events, snapshot([payment()], [charge()]), [], {
    keyTtlMs: 1000,
    startedAt: T0,
  });
  const work = achieved(coverage, { withPayment: 1, browserWithPayment: 1 });
  expect(work.browserStarted).toBe(1);
});

test('the ci plan has rude operators of every kind, and only on flows that have the request each needs', () => {
  const options = {
    workerNames: ['worker-1', 'worker-2'],
    leaseMs: 3000,
    processorTimeoutMs: 4000,
    reconcileAfterMs: 4000,
  };
  for (const seed of [1, 2]) {
    const rude = planRun(seed, PROFILES.ci!, onceCatalogues, options).intents.filter((i) => i.rude);
    expect(
      rude.some((i) => i.rude!.rival?.f === 'void'),
      `seed ${seed}`,
    ).toBe(true);
    expect(rude.some((i) => i.rude!.rival?.f === 'capture')).toBe(true);
    expect(rude.some((i) => i.rude!.refundsAtOnce)).toBe(true);
    expect(rude.some((i) => i.rude!.refundAcrossTransports)).toBe(true);
    expect(rude.some((i) => i.rude!.captureKeyForRefund)).toBe(true);
    expect(rude.filter((i) => i.rude!.revokedSession).length).toBeGreaterThanOrEqual(2);
    for (const i of rude) {
      if (i.rude!.rival) expect(['capture', 'void']).toContain(i.flow);
      if (i.rude!.captureKeyForRefund) expect(i.flow).toBe('capture');
      if (i.rude!.refundsAtOnce || i.rude!.refundAcrossTransports)
        expect(i.refunds.length).toBeGreaterThan(0);
      if (i.rude!.rival) expect(i.rude!.rival.key).not.toBe(i.operatorAction?.key);
    }
  }
});
