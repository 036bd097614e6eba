import { describe, expect, it } from 'vitest';
import { createIdempotency, type Idempotency } from './engine.ts';
import type { IdempotencyStore } from './types.ts';

const request = { tenantId: 't', operation: 'op', key: 'k', fingerprint: 'f' };
const refused = { status: 400, headers: {}, body: null };

describe('atomic execution', () => {
  it('has no phases when the request names atomic mode: advance/runPhases do not compile', () => {
    const misuse = (idempotency: Idempotency<unknown>) =>
      idempotency.execute({ ...request, policy: { mode: 'atomic' } }, async (exec) => {
        // @ts-expect-error atomic mode has no recovery points to advance
        await exec.advance(undefined, 'charged');
        // @ts-expect-error atomic mode has no phases to run
        await exec.runPhases({});
        return refused;
      });
    expect(typeof misuse).toBe('function');
  });

  it('refuses phases at run time when configuration picks atomic mode', async () => {
    // Only the lookup runs before the handler; nothing is found, so the handler runs.
    const store = { lookup: async () => undefined } as unknown as IdempotencyStore<unknown>;
    const idempotency = createIdempotency({ store, defaults: { mode: 'atomic' } });
    const errors: string[] = [];
    const outcome = await idempotency.execute(request, async (exec) => {
      await exec.advance(undefined, 'charged').catch((e: Error) => errors.push(e.message));
      await exec.runPhases({}).catch((e: Error) => errors.push(e.message));
      return refused;
    });
    expect(outcome.kind).toBe('executed');
    expect(errors).toEqual([
      "op runs in atomic mode, which has no recovery points to advance: use mode 'leased' for recovery points",
      "op runs in atomic mode, which has no phases to run: use mode 'leased' for recovery points",
    ]);
  });

  it('may complete again in a NEW transaction: the caller retried a transaction the server rolled back', async () => {
    const inserts: unknown[] = [];
    const store = {
      lookup: async () => undefined,
      insertCompleted: async (tx: unknown) => {
        inserts.push(tx);
        return 'inserted';
      },
    } as unknown as IdempotencyStore<unknown>;
    const idempotency = createIdempotency({ store });
    const stored = { status: 200, headers: {}, body: '{}' };
    const first = { name: 'rolled back with 40001' };
    const retry = { name: 'the retry' };
    const outcome = await idempotency.execute(
      { ...request, policy: { mode: 'atomic' } },
      async (exec) => {
        await exec.complete(first, stored);
        await exec.complete(retry, stored);
        return stored;
      },
    );
    expect(outcome.kind).toBe('executed');
    expect(inserts).toEqual([first, retry]);
    // Twice in the SAME transaction is still a mistake, refused before it reaches the store.
    await expect(
      idempotency.execute({ ...request, policy: { mode: 'atomic' } }, async (exec) => {
        await exec.complete(first, stored);
        await exec.complete(first, stored);
        return stored;
      }),
    ).rejects.toThrow(/called twice/);
  });

  it('a complete refused before the insert is a rejected promise, never a throw', async () => {
    const store = {
      lookup: async () => undefined,
      insertCompleted: async () => 'inserted',
    } as unknown as IdempotencyStore<unknown>;
    const idempotency = createIdempotency({ store });
    const stored = { status: 200, headers: {}, body: '{}' };
    const tx = { name: 'the transaction' };
    let second: Promise<void> | undefined;
    await idempotency.execute({ ...request, policy: { mode: 'atomic' } }, async (exec) => {
      await exec.complete(tx, stored);
      second = exec.complete(tx, stored);
      second.catch(() => {});
      return stored;
    });
    await expect(second).rejects.toThrow(/called twice/);
  });
});
