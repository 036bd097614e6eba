import { describe, expect, it } from 'vitest';
import type { Execution } from './execution.ts';
import { jsonExecution, jsonResponse, storedResultOf } from './json-execution.ts';
import type { StoredResponse } from './types.ts';

/** An execution that records what was completed (no store: this is about serialisation). */
function recordingExecution(stored: StoredResponse[]): Execution<'tx'> {
  return {
    active: true,
    tenantId: 't',
    operation: 'op',
    key: 'k',
    recoveryPoint: 'start',
    recoveryData: undefined,
    resumed: false,
    signal: new AbortController().signal,
    complete: async (_tx: 'tx', response: StoredResponse) => {
      stored.push(response);
    },
    advance: async () => {},
    renew: async () => {},
    runPhases: async () => {
      throw new Error('unused');
    },
  } as unknown as Execution<'tx'>;
}

/** A result that counts how often JSON.stringify serialises it. */
function countedResult() {
  const counter = { calls: 0 };
  return {
    counter,
    value: {
      id: 'pay_1',
      toJSON() {
        counter.calls++;
        return { id: 'pay_1' };
      },
    },
  };
}

describe('jsonExecution', () => {
  it('serialises a completed result once: storedResultOf reuses what complete stored', async () => {
    const stored: StoredResponse[] = [];
    const json = jsonExecution(recordingExecution(stored));
    const { counter, value } = countedResult();
    await json.complete('tx', value);
    const response = storedResultOf(json, value);
    expect(counter.calls).toBe(1);
    expect(response).toBe(stored[0]);
    expect(response).toEqual(jsonResponse(200, { id: 'pay_1' }));
  });

  it('serialises afresh a value other than the completed one, and when nothing was completed', async () => {
    const json = jsonExecution(recordingExecution([]));
    expect(json.completed).toBeUndefined();
    expect(storedResultOf(json, { a: 1 })).toEqual(jsonResponse(200, { a: 1 }));
    await json.complete('tx', { a: 1 });
    const other = { a: 2 };
    expect(storedResultOf(json, other)).toEqual(jsonResponse(200, other));
  });

  it('remembers nothing when complete fails (the store refused: no stale snapshot)', async () => {
    const exec = recordingExecution([]);
    const failing = { ...exec, complete: async () => Promise.reject(new Error('lost')) };
    const json = jsonExecution(failing as unknown as Execution<'tx'>);
    await expect(json.complete('tx', { a: 1 })).rejects.toThrow('lost');
    expect(json.completed).toBeUndefined();
  });

  it('a result JSON cannot hold is a rejected complete, never a throw, and stores nothing', async () => {
    const stored: StoredResponse[] = [];
    const json = jsonExecution(recordingExecution(stored));
    const pending = json.complete('tx', { amount: 1n });
    await expect(pending).rejects.toThrow(TypeError);
    expect(stored).toEqual([]);
    expect(json.completed).toBeUndefined();
  });
});
