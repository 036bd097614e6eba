import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_FIELD, idempotentAction } from '../adapters/next/server-action.ts';
import { createIdempotency, type Idempotency } from '../core/engine.ts';
import type { OperationPolicy } from '../core/types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { refusal } from '../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * Whose key it is: a key is scoped by tenant, operation and, where the app names one, the
 * principal; and a Server Action's key comes only from where the app says it comes from.
 */
let t: IdempotencyTestDatabase;
let idempotency: Idempotency<unknown>;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('key_scope');
  idempotency = createIdempotency({ store: createDrizzleStore(t.db) }) as Idempotency<unknown>;
});
afterAll(async () => {
  await t?.drop();
});

let counter = 0;
const newKey = () => `scope-${++counter}-${Math.random()}`;

describe('the principal is part of a key’s scope where one is given', () => {
  for (const mode of ['leased', 'atomic'] as const) {
    it(`${mode}: user B sending user A's key and input never gets A's stored response`, async () => {
      const key = newKey();
      const run = (principal: string, policy: OperationPolicy = {}) =>
        idempotency.execute(
          {
            tenantId: 'shop',
            operation: 'orders.show_receipt',
            key,
            fingerprint: 'same-input',
            principal,
            policy: { mode, ...policy },
          },
          async (exec) => {
            const response = { status: 200, headers: {}, body: `{"for":"${principal}"}` };
            if (mode === 'atomic')
              await t.db.transaction((tx) => exec.complete(tx as never, response));
            return response;
          },
        );
      expect((await run('user-a')).response.body).toBe('{"for":"user-a"}');
      // A's own retry replays.
      const replay = await run('user-a');
      expect([replay.kind, replay.response.body]).toEqual(['replayed', '{"for":"user-a"}']);
      // B with A's key and input: refused, never A's response.
      expect((await refusal(run('user-b'))).code).toBe('idempotency_key_reused');
      // An operation that means the tenant-wide key says so.
      const shared = await run('user-b', { keyScope: 'tenant' }).catch((e: unknown) => e);
      expect(shared).toMatchObject({ code: 'idempotency_key_reused' });
    });
  }

  it("keyScope 'tenant': the key is the tenant's, whoever sends it", async () => {
    const key = newKey();
    const run = (principal: string) =>
      idempotency.execute(
        {
          tenantId: 'shop',
          operation: 'team.invite',
          key,
          fingerprint: 'fp',
          principal,
          policy: { keyScope: 'tenant' },
        },
        async () => ({ status: 201, headers: {}, body: `{"by":"${principal}"}` }),
      );
    await run('user-a');
    const other = await run('user-b');
    expect([other.kind, other.response.body]).toEqual(['replayed', '{"by":"user-a"}']);
  });
});

describe('Server Action: the key comes only from where the app says', () => {
  it('a plain string first argument is an argument, not a key: buy("book-123") twice is two calls without a key', async () => {
    let runs = 0;
    const buy = idempotentAction(
      async (_exec, sku: string) => {
        runs++;
        return { sku };
      },
      { idempotency, operation: 'buy', getTenantId: () => 't' },
    );
    expect(await buy('book-123')).toMatchObject({ ok: false, code: 'idempotency_key_missing' });
    expect(runs).toBe(0);
    // The form field is still the default; `getKey` names any other source.
    const form = new FormData();
    form.set(IDEMPOTENCY_KEY_FIELD, newKey());
    const formBuy = idempotentAction(async (_exec, _form: FormData) => ({ ok: true }), {
      idempotency,
      operation: 'buy-form',
      getTenantId: () => 't',
    });
    expect(await formBuy(form)).toMatchObject({ ok: true, replayed: false });
    const keyed = idempotentAction(async (_exec, _key: string, sku: string) => ({ sku }), {
      idempotency,
      operation: 'buy-keyed',
      getTenantId: () => 't',
      getKey: (key) => key,
    });
    const key = newKey();
    expect(await keyed(key, 'book-123')).toMatchObject({ ok: true, replayed: false });
    expect(await keyed(key, 'book-123')).toMatchObject({ ok: true, replayed: true });
    expect(await keyed(key, 'lamp')).toMatchObject({ ok: false, code: 'idempotency_key_reused' });
  });
});
