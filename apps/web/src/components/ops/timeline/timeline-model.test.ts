import { describe, expect, it } from 'vitest';
import { lanesOf, stepOf, type TimelineEventData, timelineOf } from './timeline-model.ts';

const at = '2026-01-01T00:00:00.000Z';
const event = (
  seq: number,
  actor: string,
  kind: string,
  detail: Record<string, unknown> = {},
): TimelineEventData => ({ seq, at, actor, kind, detail });

describe('timeline model', () => {
  it('orders lanes the way a payment travels, workers by first appearance', () => {
    const steps = [
      event(1, 'browser', 'pay.attempt', { to: 'web', key: 'k', replayed: false }),
      event(2, 'reconciler', 'reconciler.decided', { to: 'processor', decision: 'succeeded' }),
      event(3, 'worker:w2', 'job.claimed', { attempt: 1 }),
      event(4, 'worker:w1', 'job.claimed', { attempt: 2, takeover: true }),
      event(5, 'processor', 'webhook.applied', { to: 'webhook' }),
    ].map(stepOf);
    expect(lanesOf(steps)).toEqual([
      'browser',
      'web',
      'worker:w2',
      'worker:w1',
      'processor',
      'webhook',
      'reconciler',
    ]);
  });

  it('shows a pay attempt its key refused (409, 422) as that refusal, not as a checkout', () => {
    const attempt = (answer: string) =>
      stepOf(
        event(1, 'api_client', 'pay.attempt', { to: 'web', key: 'k', transport: 'rest', answer }),
      );
    expect(attempt('idempotency_key_reused')).toMatchObject({
      label: 'pay: idempotency_key_reused',
      tone: 'bad',
    });
    expect(attempt('idempotency_key_reused').description).toContain(
      '422: the key was already used',
    );
    expect(attempt('idempotency_key_in_use')).toMatchObject({ tone: 'warn' });
    expect(attempt('idempotency_outcome_unknown').description).toContain('409');
  });

  it('names processor call results: charged, replayed, 409 in flight, failed', () => {
    const call = (detail: Record<string, unknown>) =>
      stepOf(event(1, 'worker:w1', 'processor.call', { to: 'processor', ...detail }));
    expect(call({ call: 'confirm', result: 'ok', status: 'succeeded' })).toMatchObject({
      from: 'worker:w1',
      to: 'processor',
      label: 'confirm: charged',
      tone: 'ok',
    });
    expect(
      call({ call: 'create', result: 'replayed', status: 'requires_confirmation' }).label,
    ).toBe('create: replayed (requires_confirmation)');
    expect(call({ call: 'confirm', result: 'in_flight' }).label).toBe('confirm: 409 in flight');
    // In the words of the chaos switch that broke it; the code stays in the description.
    expect(call({ call: 'confirm', result: 'failed', error: 'http_500' })).toMatchObject({
      label: 'confirm: failed: 500 answered',
      tone: 'warn',
      marker: 'fault',
    });
    expect(call({ call: 'confirm', result: 'failed', error: 'http_500' }).description).toContain(
      '(http_500)',
    );
    expect(
      call({ call: 'confirm', result: 'failed', error: 'connection: socket hang up' }).label,
    ).toBe('confirm: failed: connection dropped');
  });

  it('shows a lease takeover and an unknown kind rather than hiding them', () => {
    expect(
      stepOf(
        event(1, 'worker:w2', 'job.claimed', { attempt: 2, takeover: true, previousWorker: 'w1' }),
      ),
    ).toMatchObject({
      from: 'worker:w2',
      to: 'worker:w2',
      tone: 'warn',
      label: 'took over (attempt 2)',
    });
    expect(stepOf(event(2, 'web', 'something.new', { a: 1 }))).toMatchObject({
      label: 'something.new',
      to: 'web',
    });
  });

  it('draws a re-run worker in its own lane, the lost lease, the quiet time and the broken call', () => {
    const timed = (seq: number, seconds: number, actor: string, kind: string, detail = {}) => ({
      ...event(seq, actor, kind, detail),
      at: new Date(Date.parse(at) + seconds * 1000).toISOString(),
    });
    const { lanes, steps } = timelineOf([
      timed(1, 0, 'worker:worker-1', 'job.claimed', { job: 'j', attempt: 1 }),
      timed(2, 0.5, 'worker:worker-1', 'processor.call', {
        to: 'processor',
        call: 'confirm',
        result: 'failed',
        error: 'http_500_api_error',
      }),
      timed(3, 10.5, 'worker:worker-1', 'job.claimed', {
        job: 'j',
        attempt: 2,
        takeover: true,
        previousWorker: 'worker-1',
      }),
    ]);
    expect(lanes).toEqual([
      'browser',
      'web',
      'worker:worker-1',
      'worker:worker-1#run 2',
      'processor',
    ]);
    expect(steps.map((s) => [s.marker ?? '', s.from, s.label])).toEqual([
      ['', 'worker:worker-1', 'claimed (attempt 1)'],
      ['fault', 'worker:worker-1', 'confirm: failed: 500 answered'],
      ['gap', '', '10 s with nothing recorded'],
      ['lost', 'worker:worker-1', 'stopped answering'],
      ['', 'worker:worker-1#run 2', 'took over (attempt 2)'],
    ]);
    expect(new Set(steps.map((s) => s.key)).size).toBe(steps.length);
  });

  it('scene 3: draws the confirm whose answer the killed worker never heard, and the kill where it happened', () => {
    const timed = (seq: number, seconds: number, actor: string, kind: string, detail = {}) => ({
      ...event(seq, actor, kind, detail),
      at: new Date(Date.parse(at) + seconds * 1000).toISOString(),
    });
    const { steps } = timelineOf([
      timed(1, 0, 'worker:worker-1', 'job.claimed', { job: 'j', attempt: 1 }),
      timed(2, 0.2, 'worker:worker-1', 'processor.call', {
        to: 'processor',
        call: 'create',
        result: 'ok',
        status: 'requires_confirmation',
      }),
      timed(3, 0.3, 'worker:worker-1', 'intent.recorded', { intent: 'pi_1' }),
      timed(4, 1.5, 'operator', 'chaos.pressed', {
        to: 'worker:worker-1',
        switch: 'kill_worker',
        did: 'worker-1 (pid 42) killed with SIGKILL; the launcher restarts it',
      }),
      timed(5, 2.5, 'worker:worker-2', 'job.claimed', {
        job: 'j',
        attempt: 2,
        takeover: true,
        previousWorker: 'worker-1',
      }),
    ]);
    expect(steps.map((s) => [s.marker ?? '', s.from, s.to, s.label])).toEqual([
      ['', 'worker:worker-1', 'worker:worker-1', 'claimed (attempt 1)'],
      ['', 'worker:worker-1', 'processor', 'create: requires_confirmation'],
      ['', 'worker:worker-1', 'worker:worker-1', 'intent pi_1 recorded'],
      ['held', 'worker:worker-1', 'processor', 'confirm: no answer heard'],
      ['', 'operator', 'worker:worker-1', 'kill_worker: SIGKILL'],
      ['lost', 'worker:worker-1', 'worker:worker-1', 'killed'],
      ['', 'worker:worker-1', 'worker:worker-1', 'lease ran out'],
      ['', 'worker:worker-2', 'worker:worker-2', 'took over (attempt 2)'],
    ]);
    expect(steps.find((s) => s.marker === 'held')?.description).toMatch(
      /sent after the intent was recorded.*never recorded/,
    );
  });
});
