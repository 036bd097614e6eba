import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createPrecheckAdvisor,
  PRECHECK_MAX_OPERATIONS,
  PRECHECK_READ_ABOVE,
  PRECHECK_SMOOTHING,
} from './precheck-advisor.ts';

/** Consecutive new keys that bring any share (at most 1) below the threshold. */
const QUIET_RUN = Math.ceil(Math.log(PRECHECK_READ_ABOVE) / Math.log(1 - PRECHECK_SMOOTHING));
/** Consecutive taken keys that bring a share of 0 (so any share) above it. */
const BURST = (() => {
  let share = 0;
  let n = 0;
  while (share <= PRECHECK_READ_ABOVE) {
    share += (1 - share) * PRECHECK_SMOOTHING;
    n++;
  }
  return n;
})();

const history = fc.array(fc.boolean(), { maxLength: 200 });

describe('precheck advisor', () => {
  it('reads for a new operation: a process that just started meets the retries its predecessor left', () => {
    expect(createPrecheckAdvisor().shouldRead('checkout.pay')).toBe(true);
  });

  it('stops reading after a run of first requests, whatever came before', () => {
    fc.assert(
      fc.property(history, (before) => {
        const advisor = createPrecheckAdvisor();
        for (const taken of before) advisor.record('pay', taken);
        for (let i = 0; i < QUIET_RUN; i++) advisor.record('pay', false);
        expect(advisor.shouldRead('pay')).toBe(false);
      }),
    );
  });

  it(`reads again within ${BURST} retries of taken keys, whatever came before`, () => {
    expect(BURST).toBe(2);
    fc.assert(
      fc.property(history, (before) => {
        const advisor = createPrecheckAdvisor();
        for (const taken of before) advisor.record('pay', taken);
        for (let i = 0; i < BURST; i++) advisor.record('pay', true);
        expect(advisor.shouldRead('pay')).toBe(true);
      }),
    );
  });

  it('reads nearly always at one retry in 10, nearly never at one in 200', () => {
    const steady = (takenEvery: number) => {
      const advisor = createPrecheckAdvisor();
      const reads: boolean[] = [];
      for (let i = 0; i < 2_000; i++) {
        advisor.record('pay', i % takenEvery === 0);
        if (i >= 1_000) reads.push(advisor.shouldRead('pay'));
      }
      return reads.filter(Boolean).length / reads.length;
    };
    expect(steady(10)).toBe(1); // skipping would cost about what it saves: read
    expect(steady(200)).toBeLessThan(0.02); // the read would be wasted 199 times in 200
  });

  it('keeps one estimate per operation', () => {
    const advisor = createPrecheckAdvisor();
    for (let i = 0; i < QUIET_RUN; i++) advisor.record('pay', false);
    expect(advisor.shouldRead('pay')).toBe(false);
    expect(advisor.shouldRead('refund')).toBe(true);
  });

  it("a request's plan follows its own operation's estimate and records into it, plan after plan", () => {
    const advisor = createPrecheckAdvisor();
    // Plans are made before any estimate exists; each reports what its request found.
    advisor.planFor('refund', 'adaptive');
    for (let i = 0; i < QUIET_RUN; i++) advisor.planFor('pay', 'adaptive').record(false);
    expect(advisor.planFor('pay', 'adaptive').readFirst).toBe(false);
    expect(advisor.planFor('refund', 'adaptive').readFirst).toBe(true);
    for (let i = 0; i < BURST; i++) advisor.planFor('pay', 'adaptive').record(true);
    expect(advisor.planFor('pay', 'adaptive').readFirst).toBe(true);
    // A fixed precheck reads as it says and records nothing.
    expect(advisor.planFor('refund', false).readFirst).toBe(false);
    for (let i = 0; i < QUIET_RUN; i++) advisor.planFor('refund', true).record(false);
    expect(advisor.shouldRead('refund')).toBe(true);
  });

  it(`bounds its memory: past ${PRECHECK_MAX_OPERATIONS} operations the rest share one estimate`, () => {
    const advisor = createPrecheckAdvisor();
    for (let i = 0; i < PRECHECK_MAX_OPERATIONS; i++) advisor.record(`op-${i}`, true);
    for (let i = 0; i < QUIET_RUN; i++) advisor.record('late-a', false);
    // A fresh operation would read; this one shares late-a's estimate.
    expect(advisor.shouldRead('late-b')).toBe(false);
    expect(advisor.shouldRead('op-0')).toBe(true);
  });
});
