import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from './attempt-outcome.ts';
import { type RetryFlowState, runRetryFlow } from './retry-flow.ts';

type Result = { paymentId: string };

/** A scripted server: answers attempt n with script[n], and records the keys it saw. */
function scripted(key: string, script: AttemptOutcome<Result>[]) {
  const seenKeys: string[] = [];
  let i = 0;
  return {
    seenKeys,
    send: async () => {
      seenKeys.push(key);
      const next = script[Math.min(i++, script.length - 1)]!;
      return next;
    },
  };
}

async function run(script: AttemptOutcome<Result>[], extra: { maxNetworkAttempts?: number } = {}) {
  const server = scripted('k1', script);
  const states: RetryFlowState<Result>[] = [];
  const slept: number[] = [];
  const final = await runRetryFlow<Result>({
    send: server.send,
    onState: (s) => states.push(s),
    sleep: async (ms) => {
      slept.push(ms);
    },
    ...extra,
  });
  return { final, states, slept, sent: server.seenKeys.length };
}

const accepted = (replayed = false): AttemptOutcome<Result> => ({
  kind: 'accepted',
  result: { paymentId: 'pay_1' },
  replayed,
});

describe('runRetryFlow', () => {
  it('shows in flight, then accepted', async () => {
    const { final, states, sent } = await run([accepted()]);
    expect(states.map((s) => s.phase)).toEqual(['in_flight', 'accepted']);
    expect(final).toEqual({ phase: 'accepted', result: { paymentId: 'pay_1' }, replayed: false });
    expect(sent).toBe(1);
  });

  it('waits out a conflict with a per-second countdown, then gets the replay', async () => {
    const { final, states, slept, sent } = await run([
      { kind: 'in_use', retryAfterSeconds: 2 },
      accepted(true),
    ]);
    expect(states.map((s) => s.phase)).toEqual([
      'in_flight',
      'conflict_waiting',
      'conflict_waiting',
      'in_flight',
      'accepted',
    ]);
    expect(states[1]).toMatchObject({ secondsLeft: 2 });
    expect(states[2]).toMatchObject({ secondsLeft: 1 });
    expect(slept).toEqual([1000, 1000]);
    expect(final).toMatchObject({ phase: 'accepted', replayed: true });
    expect(sent).toBe(2);
  });

  it('retries a lost response and a 5xx, then succeeds', async () => {
    const { final, sent, states } = await run([
      { kind: 'network', detail: 'connection reset' },
      { kind: 'server_error', status: 502, detail: 'bad gateway' },
      accepted(true),
    ]);
    expect(sent).toBe(3);
    expect(states.some((s) => s.phase === 'network_retrying')).toBe(true);
    expect(final).toMatchObject({ phase: 'accepted', replayed: true });
  });

  it('gives up on the network after the bound and leaves the retry to the user', async () => {
    const { final, sent } = await run([{ kind: 'network', detail: 'refused' }], {
      maxNetworkAttempts: 3,
    });
    expect(sent).toBe(3);
    expect(final).toEqual({ phase: 'outcome_unknown', attempts: 3, detail: 'refused' });
  });

  it.each([
    [{ kind: 'key_reused' } as const, 'key_reused'],
    [{ kind: 'store_unavailable', retryAfterSeconds: 5 } as const, 'store_unavailable'],
    [{ kind: 'rate_limited', retryAfterSeconds: 10 } as const, 'rate_limited'],
    [{ kind: 'unauthenticated' } as const, 'unauthenticated'],
    [{ kind: 'rejected', code: 'empty_cart', message: 'The cart is empty' } as const, 'rejected'],
  ])('stops at %o without retrying', async (answer, phase) => {
    const { final, sent } = await run([answer, accepted()]);
    expect(final.phase).toBe(phase);
    expect(sent).toBe(1);
  });

  it('stops sending once cancelled', async () => {
    const controller = new AbortController();
    let sent = 0;
    const final = await runRetryFlow<Result>({
      send: async () => {
        sent++;
        controller.abort();
        return { kind: 'network', detail: 'x' };
      },
      onState: () => {},
      sleep: async () => {},
      signal: controller.signal,
    });
    expect(final.phase).toBe('cancelled');
    expect(sent).toBe(1);
  });
});
