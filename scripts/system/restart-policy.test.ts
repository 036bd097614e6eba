import { describe, expect, it } from 'vitest';
import { RestartHistory } from './restart-policy.ts';

const policy = {
  initialDelayMs: 100,
  maxDelayMs: 1_000,
  maxRestarts: 4,
  windowMs: 10_000,
  resetAfterMs: 5_000,
};

describe('RestartHistory', () => {
  it('doubles the delay for crashes in a row, up to the maximum', () => {
    const history = new RestartHistory({ ...policy, maxRestarts: 100 });
    const delays = [0, 1, 2, 3, 4, 5].map((i) => {
      const decision = history.decide(i * 2_000, 10);
      return decision.restart ? decision.delayMs : -1;
    });
    expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('starts the backoff afresh after the part stayed up', () => {
    const history = new RestartHistory(policy);
    history.decide(0, 10);
    history.decide(100, 10);
    expect(history.decide(20_000, 6_000)).toMatchObject({ restart: true, delayMs: 100 });
  });

  it('gives up on more restarts than allowed within the window, not on the same number spread out', () => {
    const loop = new RestartHistory(policy);
    const decisions = [0, 1, 2, 3, 4].map((i) => loop.decide(i * 100, 10).restart);
    expect(decisions).toEqual([true, true, true, true, false]);

    const spread = new RestartHistory(policy);
    const spaced = [0, 1, 2, 3, 4, 5].map((i) => spread.decide(i * 4_000, 10).restart);
    expect(spaced.every(Boolean)).toBe(true);
  });
});
