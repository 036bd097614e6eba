import { describe, expect, it } from 'vitest';
import { outboxJobStatuses } from '../schema/outbox.ts';
import { canMoveJob, liveJobStatuses, outboxJobTransitions } from './job-states.ts';

describe('outbox job states', () => {
  it('the transition table: a claim starts a job, only a running job moves on, done and dead never', () => {
    expect(outboxJobTransitions).toEqual({
      pending: ['running'],
      running: ['running', 'pending', 'done', 'dead'],
      done: [],
      dead: [],
    });
    for (const to of outboxJobStatuses) {
      expect(canMoveJob('done', to)).toBe(false);
      expect(canMoveJob('dead', to)).toBe(false);
    }
  });

  it('the live jobs (a payment with one has its charge under way) are pending and running', () => {
    expect(liveJobStatuses).toEqual(['pending', 'running']);
  });
});
