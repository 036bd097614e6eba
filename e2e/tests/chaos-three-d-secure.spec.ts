import {
  type AppPayment,
  achieved,
  checkHistory,
  History,
  type IntentFacts,
  type LedgerEntry,
  measureCoverage,
  paymentMethodOf,
  planRun,
  type Snapshot,
  shortfalls,
} from '@once/chaos';
import { expect, test } from '@playwright/test';
import { onceCatalogues } from '../chaos/once-target.ts';
import { PROFILES } from '../chaos/profiles.ts';

/** 3-D Secure shoppers in the chaos suite: their plan, the checker's rule, the floor. No system runs. */
const T0 = 1_700_000_000_000;
const intent: IntentFacts = { id: 'i1', tenantId: 'tenant_a', amount: 4599, declinedCard: false };
const options = {
  workerNames: ['worker-1', 'worker-2'],
  leaseMs: 3000,
  processorTimeoutMs: 4000,
  reconcileAfterMs: 4000,
};

const payment = (status: string): AppPayment => ({
  tenantId: 'tenant_a',
  id: 'pay_1',
  status,
  amount: 4599,
  idempotencyKey: 'k1',
  createdAt: T0 + 100,
  updatedAt: T0 + 500,
});

const charge: LedgerEntry = {
  kind: 'charge',
  accountId: 'acct_tenant_a',
  tenantId: 'tenant_a',
  paymentId: 'pay_1',
  amount: 4599,
  paymentIntentId: 'pi_1',
  createdAt: T0 + 300,
};

/** Intent i1 paid with key k1 (pay_1), met the challenge and answered `answer`. */
function challengeHistory(answer: 'complete' | 'fail' | 'leave'): History {
  let now = T0;
  const history = new History(() => now);
  const base = { intent: 'i1', tenantId: 'tenant_a', key: 'k1', process: 'client-rest' };
  now += 10;
  history.invoke({ ...base, f: 'pay' })('ok', { status: 201, paymentId: 'pay_1' });
  now += 10;
  history.invoke({ ...base, f: 'challenge' })('ok', { paymentId: 'pay_1', answer });
  return history;
}

const check = (history: History, payments: AppPayment[], ledger: LedgerEntry[]) =>
  checkHistory({
    intents: [intent],
    events: history.events,
    snapshot: { payments, ledger, backstage: [], counters: {} } satisfies Snapshot,
    healAt: 0,
    startedAt: T0,
  }).violations.map((v) => v.kind);

test('a failed or left challenge charges nothing; a left one ends canceled', () => {
  expect(check(challengeHistory('complete'), [payment('succeeded')], [charge])).toEqual([]);
  expect(check(challengeHistory('fail'), [payment('failed')], [])).toEqual([]);
  // Its answer lost before the processor took it: left, then canceled.
  expect(check(challengeHistory('fail'), [payment('canceled')], [])).toEqual([]);
  expect(check(challengeHistory('leave'), [payment('canceled')], [])).toEqual([]);

  expect(check(challengeHistory('fail'), [payment('succeeded')], [charge])).toEqual([
    'challenge_not_honoured',
  ]);
  expect(check(challengeHistory('leave'), [payment('succeeded')], [charge])).toEqual([
    'challenge_not_honoured',
  ]);
  expect(check(challengeHistory('leave'), [payment('failed')], [])).toEqual([
    'challenge_not_honoured',
  ]);
  // Never canceled: the payment is still waiting after the heal.
  expect(check(challengeHistory('leave'), [payment('requires_action')], [])).toEqual([
    'not_terminal',
  ]);
});

test('the schedule adds 3-D Secure shoppers of every kind and leaves the rest of the plan as it was', () => {
  const ci = PROFILES.ci!;
  const without = { ...ci, moneyFlows: { ...ci.moneyFlows, threeDSecureShare: 0 } };
  for (const seed of [1, 2, 3]) {
    const plan = planRun(seed, ci, onceCatalogues, options);
    const challenged = plan.intents.filter((i) => i.challenge);
    const answers = new Set(challenged.map((i) => i.challenge!.answer));
    expect([...answers].sort(), `seed ${seed}`).toEqual(['complete', 'fail', 'leave']);
    expect(challenged.some((i) => i.challenge!.loseRedirect)).toBe(true);
    expect(challenged.some((i) => i.transport === 'browser')).toBe(true);
    expect(challenged.some((i) => i.transport !== 'browser')).toBe(true);
    // Only automatic card charges that would have succeeded meet the challenge.
    for (const i of challenged) {
      expect(i.flow).toBe('charge');
      expect(i.paymentMethod).toBe('pm_card_visa');
      expect(paymentMethodOf(i)).toBe('pm_card_threeDSecure2Required');
    }
    // Everything else is the plan the seed made without 3-D Secure.
    const before = planRun(seed, without, onceCatalogues, options);
    const rest = (i: (typeof plan.intents)[number]) => {
      const { challenge: _c, ...others } = i;
      return others;
    };
    expect(plan.intents.map(rest)).toEqual(before.intents);
    expect(plan.nemesis).toEqual(before.nemesis);
  }
});

test('a ci run in which no shopper met a challenge falls short of its floor', () => {
  const count = (answer?: 'complete') => {
    const history = answer ? challengeHistory(answer) : new History(() => T0);
    const coverage = measureCoverage(
      history.events,
      { payments: [], ledger: [], backstage: [], counters: {} },
      [],
      { keyTtlMs: 20_000, startedAt: T0 },
    );
    const work = achieved(coverage, {
      withPayment: 0,
      browserWithPayment: 0,
    });
    return shortfalls(work, { threeDSecure: PROFILES.ci!.floors!.threeDSecure! }, []);
  };
  expect(count()).toEqual(['threeDSecure 0 < 1']);
  expect(count('complete')).toEqual([]);
});
