import { describe, expect, it } from 'vitest';
import { createIdempotency } from './engine.ts';
import { createEngineContext } from './engine-context.ts';
import type { IdempotencyEvent, IdempotencyStore } from './types.ts';

const id = { tenantId: 't', operation: 'pay', key: 'k' };

function contextTelling(events: IdempotencyEvent[]) {
  return createEngineContext({
    store: {} as IdempotencyStore<unknown>,
    storeTimeoutMs: 1_000,
    maxResponseBytes: 1_000,
    rateLimit: undefined,
    onEvent: (event) => events.push(event),
    unreplicatedCommits: () => 0,
  });
}

describe('engine context', () => {
  it("a key's event names its tenant and operation (never the key), a timed one its duration", () => {
    const events: IdempotencyEvent[] = [];
    const context = contextTelling(events);
    context.emitKeyEvent('created', id);
    context.emitKeyEvent('completed', id, 12.5);
    expect(events).toStrictEqual([
      { type: 'created', tenantId: 't', operation: 'pay' },
      { type: 'completed', tenantId: 't', operation: 'pay', durationMs: 12.5 },
    ]);
  });

  it('an atomic request that completed tells created, then completed with the time its handler took', async () => {
    const events: IdempotencyEvent[] = [];
    const store = {
      lookup: async () => undefined,
      insertCompleted: async () => 'inserted',
    } as unknown as IdempotencyStore<unknown>;
    const idempotency = createIdempotency({ store, onEvent: (event) => events.push(event) });
    const response = { status: 200, headers: {}, body: '{}' };
    await idempotency.execute(
      { tenantId: 't', operation: 'pay', key: 'k', fingerprint: 'f', policy: { mode: 'atomic' } },
      async (exec) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await exec.complete(undefined, response);
        return response;
      },
    );
    expect(events.map((event) => event.type)).toEqual(['created', 'completed']);
    expect(events[1]).toStrictEqual({
      type: 'completed',
      tenantId: 't',
      operation: 'pay',
      durationMs: expect.any(Number),
    });
    expect(events[1]?.durationMs).toBeGreaterThanOrEqual(15);
  });

  it('a leased request that completed tells created, then completed with the time its handler took', async () => {
    const events: IdempotencyEvent[] = [];
    const store = {
      lookup: async () => undefined,
      reserve: async () => ({
        kind: 'acquired',
        created: true,
        takenOver: false,
        record: { state: 'in_progress', recoveryPoint: 'started', recoveryData: null },
      }),
      complete: async () => 'ok',
    } as unknown as IdempotencyStore<unknown>;
    const idempotency = createIdempotency({ store, onEvent: (event) => events.push(event) });
    await idempotency.execute(
      { tenantId: 't', operation: 'pay', key: 'k', fingerprint: 'f', policy: { mode: 'leased' } },
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { status: 200, headers: {}, body: '{}' };
      },
    );
    expect(events).toStrictEqual([
      { type: 'created', tenantId: 't', operation: 'pay' },
      { type: 'completed', tenantId: 't', operation: 'pay', durationMs: expect.any(Number) },
    ]);
    expect(events[1]?.durationMs).toBeGreaterThanOrEqual(15);
  });
});
