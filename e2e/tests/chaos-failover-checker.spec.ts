import {
  type AppPayment,
  checkHistory,
  type FailoverRecord,
  History,
  type IntentFacts,
  type LedgerEntry,
  type LostRow,
  planRun,
  type Snapshot,
} from '@once/chaos';
import { expect, test } from '@playwright/test';
import { onceCatalogues } from '../chaos/once-target.ts';
import { PROFILES, parseChaosArgs, replayCommand } from '../chaos/profiles.ts';

/**
 * The failover checks on hand-written histories: a shopper answered 201 for pay_1, whose row a
 * failover lost; the shopper came back with the same key and was answered pay_2. No system runs.
 */
const T0 = 1_700_000_000_000;
const intent: IntentFacts = { id: 'i1', tenantId: 'tenant_a', amount: 4599, declinedCard: false };
const KEY_OF_CHECKOUT = 'once_ck_checkout_k1';

const recreated: AppPayment = {
  tenantId: 'tenant_a',
  id: 'pay_2',
  status: 'succeeded',
  amount: 4599,
  idempotencyKey: 'k1',
  downstreamKey: KEY_OF_CHECKOUT,
  createdAt: T0 + 900,
  updatedAt: T0 + 1_000,
};

function charge(over: Partial<LedgerEntry>): LedgerEntry {
  return {
    kind: 'charge',
    accountId: 'acct_tenant_a',
    tenantId: 'tenant_a',
    paymentId: 'pay_1',
    amount: 4599,
    paymentIntentId: 'pi_1',
    createdAt: T0 + 300,
    downstreamKey: KEY_OF_CHECKOUT,
    ...over,
  };
}

/** pay_1's row as the old primary held it. */
const PAY_1_ROW: LostRow = { id: 'pay_1', createdAt: T0 + 20 };

const failover = (
  lost: Partial<FailoverRecord['lost']> = { payments: [PAY_1_ROW] },
): FailoverRecord => ({
  kind: 'pg_stop_primary',
  from: 'pg1',
  to: 'pg2',
  lost: { payments: [], refunds: [], payment_actions: [], ...lost },
});

function snapshot(
  mode: string,
  payments: AppPayment[],
  ledger: LedgerEntry[],
  failovers = [failover()],
): Snapshot {
  return { payments, ledger, backstage: [], counters: {}, failover: { mode, failovers } };
}

/** i1 answered 201 with pay_1 (shown succeeded), then, coming back after the heal, pay_2. */
function lostAndRecreated(): History {
  let now = T0;
  const history = new History(() => now);
  const answer = (f: 'pay' | 'status', paymentId: string, extra: Record<string, unknown>) => {
    now += 10;
    const complete = history.invoke({
      intent: 'i1',
      tenantId: 'tenant_a',
      key: 'k1',
      process: 'client-rest',
      f,
    });
    now += 10;
    complete('ok', { paymentId, ...extra });
  };
  answer('pay', 'pay_1', { status: 201 });
  answer('status', 'pay_1', { status: 200, state: 'succeeded' });
  answer('pay', 'pay_2', { status: 201 });
  answer('status', 'pay_2', { status: 200, state: 'succeeded' });
  return history;
}

const check = (snap: Snapshot) =>
  checkHistory({
    intents: [intent],
    events: lostAndRecreated().events,
    snapshot: snap,
    healAt: 0,
    startedAt: T0,
  });

test('async: a lost acknowledged payment is counted, and its charge belongs to the re-created one', () => {
  const result = check(snapshot('async', [recreated], [charge({})]));
  expect(result.violations).toEqual([]);
  expect(result.failover?.lostAcknowledged.payments).toEqual(['pay_1']);
  expect(result.failover?.goneInFailovers.payments).toBe(1);
});

test('sync: a lost acknowledged payment is a violation', () => {
  const result = check(snapshot('sync', [recreated], [charge({})]));
  expect(result.violations.map((v) => v.kind)).toEqual(['lost_acknowledged_commit']);
  expect(result.violations[0]!.paymentId).toBe('pay_1');
});

test('a re-created payment charged under a key of its own is a double charge (the payment-id downstream key)', () => {
  const result = check(
    snapshot(
      'async',
      [{ ...recreated, downstreamKey: 'once_pay_2' }],
      [
        charge({ downstreamKey: 'once_pay_1' }),
        charge({ paymentId: 'pay_2', paymentIntentId: 'pi_2', downstreamKey: 'once_pay_2' }),
      ],
    ),
  );
  const kinds = result.violations.map((v) => v.kind);
  expect(kinds).toContain('double_charge');
  // The first charge names a payment the app no longer has.
  expect(kinds).toContain('charge_without_payment');
});

test('a row a failover dropped that is back after the run is resurrected', () => {
  const present: AppPayment = { ...recreated, id: 'pay_1', createdAt: PAY_1_ROW.createdAt };
  const result = checkHistory({
    intents: [intent],
    events: lostAndRecreated().events.filter((e) => !('paymentId' in e) || e.paymentId === 'pay_1'),
    snapshot: snapshot('async', [present], [charge({})]),
    healAt: 0,
    startedAt: T0,
  });
  expect(result.violations.map((v) => v.kind)).toEqual(['resurrected_row']);
});

test('the failover profile: --mode, no sync cancel in async mode, every failover kind scheduled', () => {
  const sync = parseChaosArgs(['--profile', 'failover', '--seed', '3']);
  expect(sync.profile.replication).toBe('sync');
  const async = parseChaosArgs(['--profile', 'failover', '--mode', 'async', '--seed', '3']);
  expect(async.profile.faults).not.toContain('pg_sync_cancel');
  expect(replayCommand(async)).toBe('npm run chaos -- --seed 3 --profile failover --mode async');
  expect(() => parseChaosArgs(['--profile', 'ci', '--mode', 'sync'])).toThrow(/--profile failover/);
  expect(() =>
    parseChaosArgs(['--profile', 'failover', '--faults', 'pg_crash_restart,pg_switchover']),
  ).toThrow(/embedded server/);
  const windows = {
    workerNames: ['worker-1', 'worker-2'],
    leaseMs: 3_000,
    processorTimeoutMs: 4_000,
    reconcileAfterMs: 4_000,
  };
  const plan = planRun(3, PROFILES.failover!, onceCatalogues, windows);
  const kinds = new Set(plan.nemesis.map((n) => n.kind));
  for (const kind of ['pg_kill_primary', 'pg_stop_primary', 'pg_switchover', 'pg_sync_cancel'])
    expect(kinds).toContain(kind);
  expect(planRun(3, PROFILES.failover!, onceCatalogues, windows)).toEqual(plan);
});

test('a refund written again under its lost id is a new row; the lost row itself back is resurrected', () => {
  const lostRefund: LostRow = { id: 're_k9', createdAt: T0 + 40 };
  const refund = { tenantId: 'tenant_a', id: 're_k9', paymentId: 'pay_2', amount: 4599 };
  const resurrectedWith = (createdAt: number) =>
    check({
      ...snapshot(
        'async',
        [recreated],
        [charge({})],
        [failover({ payments: [PAY_1_ROW], refunds: [lostRefund] })],
      ),
      refunds: [
        {
          ...refund,
          status: 'succeeded',
          downstreamKey: 'once_rf_k9',
          processorRefundId: null,
          createdAt,
        },
      ],
    }).failover?.resurrected;
  expect(resurrectedWith(T0 + 700)).toEqual([]);
  expect(resurrectedWith(lostRefund.createdAt)).toEqual(['re_k9']);
});
