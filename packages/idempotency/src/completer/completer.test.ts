import { describe, expect, it } from 'vitest';
import type { Idempotency } from '../core/engine.ts';
import { LeaseLostError } from '../core/errors.ts';
import type { ResumedKey } from '../core/leased-engine.ts';
import { createCompleter } from './completer.ts';

const response = { status: 201, headers: {}, body: null };

/** An engine whose `resumeOne` hands out the queued keys of each operation, in order. */
function engineWith(queues: Record<string, Array<'ok' | 'fail' | 'lost'>>) {
  const taken: string[] = [];
  const counters = new Map<string, number>();
  const idempotency = {
    async resumeOne(operation: string): Promise<ResumedKey | undefined> {
      const i = counters.get(operation) ?? 0;
      const next = queues[operation]?.[i];
      if (!next) return undefined;
      counters.set(operation, i + 1);
      // A key that failed goes to the back of its queue, as `endLease` puts it.
      const key = next === 'fail' ? `${operation}:failing` : `${operation}:${i}`;
      taken.push(key);
      const id = { tenantId: 't', operation, key };
      if (next === 'ok') return { id, response };
      return { id, error: next === 'lost' ? new LeaseLostError() : new Error('phase failed') };
    },
  } as unknown as Idempotency<unknown>;
  return { idempotency, taken };
}

describe('createCompleter', () => {
  it('a pass takes at most batchSize keys, the operations in turn, and counts what became of them', async () => {
    const { idempotency, taken } = engineWith({
      a: ['ok', 'ok', 'ok', 'ok'],
      b: ['lost', 'ok'],
    });
    const events: unknown[] = [];
    const completer = createCompleter({
      idempotency,
      operations: { a: {}, b: {} },
      batchSize: 3,
      onEvent: (e) => events.push(e),
    });
    expect(await completer.runOnce()).toEqual({ completed: 2, failed: 0, lost: 1 });
    expect(taken).toEqual(['a:0', 'b:0', 'a:1']);
    expect(events).toEqual([{ type: 'resumed', count: 2 }]);
  });

  it("a key that fails is reported, and met again in the same pass it ends its operation's pass", async () => {
    const { idempotency, taken } = engineWith({ a: ['fail', 'ok', 'fail', 'ok'] });
    const failed: unknown[] = [];
    const completer = createCompleter({
      idempotency,
      operations: { a: {} },
      onError: (_error, id) => failed.push(id?.key),
    });
    expect(await completer.runOnce()).toEqual({ completed: 1, failed: 2, lost: 0 });
    expect(taken).toEqual(['a:failing', 'a:1', 'a:failing']);
    expect(failed).toEqual(['a:failing', 'a:failing']);
  });

  it('stop() ends the loop after the pass in hand, without waiting for the next', async () => {
    let release = () => {};
    let passes = 0;
    const idempotency = {
      resumeOne: async () => {
        passes++;
        await new Promise<void>((resolve) => (release = resolve));
        return undefined;
      },
    } as unknown as Idempotency<unknown>;
    const running = createCompleter({
      idempotency,
      operations: { a: {} },
      everyMs: 3_600_000,
    }).start();
    await expect.poll(() => passes).toBe(1);
    const stopped = running.stop();
    release();
    await stopped;
    expect(passes).toBe(1);
  });

  it('a pass the store fails is reported, and start() goes on with the next pass', async () => {
    let calls = 0;
    const storeDown = new Error('connection refused');
    const idempotency = {
      resumeOne: async () => {
        calls++;
        if (calls === 1) throw storeDown;
        return undefined;
      },
    } as unknown as Idempotency<unknown>;
    const errors: unknown[] = [];
    const running = createCompleter({
      idempotency,
      operations: { a: {} },
      everyMs: 1,
      onError: (error) => errors.push(error),
    }).start();
    await expect.poll(() => calls).toBeGreaterThanOrEqual(3);
    await running.stop();
    expect(errors).toEqual([storeDown]);
  });
});
