import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

// A released key (its last attempt failed before any effect) may run any request again. When
// duplicates of the new request race for it, one takes it over and the rest hear 409 or its
// replay: never 422, which would tell a client that its own retry reused the key for another
// request. The reservation statement reads the existing row from its snapshot; a takeover
// committed while it waited made that row stale (still `released`, the old request).
const CONCURRENCY = 20;
const ROUNDS = 40;

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('released_key_race', CONCURRENCY + 5);
});
afterAll(async () => {
  await t?.drop();
});

describe('leased mode: duplicates racing for a released key', () => {
  it('one takes it over; the others hear 409 or the replay, never 422', async () => {
    const idempotency = createIdempotency({
      store: createDrizzleStore(t.db),
      storeTimeoutMs: 10_000,
      defaults: { mode: 'leased' },
    });
    const answers = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const request = { tenantId: 't', operation: 'capture', key: `released-${round}` };
      const refused = idempotency.execute({ ...request, fingerprint: 'first' }, async () => {
        throw new Error('refused before any effect');
      });
      await expect(refused).rejects.toThrow('refused before any effect');
      const duplicates = Array.from({ length: CONCURRENCY }, () =>
        idempotency
          .execute({ ...request, fingerprint: 'second' }, async () => ({
            status: 201,
            headers: {},
            body: '{}',
          }))
          .then(
            (outcome) => outcome.kind,
            (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
          ),
      );
      for (const answer of await Promise.all(duplicates)) {
        answers.set(answer, (answers.get(answer) ?? 0) + 1);
      }
    }
    expect(answers.get('idempotency_key_reused') ?? 0).toBe(0);
    expect(answers.get('executed')).toBe(ROUNDS);
  });
});
