import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withIdempotency } from '../../adapters/fetch/with-idempotency.ts';
import { createIdempotency } from '../../core/engine.ts';
import { computeFingerprint } from '../../core/fingerprint.ts';
import type { IdempotencyEvent, OperationPolicy, StoredResponse } from '../../core/types.ts';
import { refusal } from '../../testing/refusal.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import type { AnswerEncryption } from './answer-codec.ts';
import { createKeyOperator } from './operator/key-operator.ts';
import { resolveUnknownKey } from './resolve-unknown.ts';
import { createDrizzleStore } from './store.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('answer_codec');
});
afterAll(async () => {
  await t?.drop();
});

const [k1, k2] = [randomBytes(32), randomBytes(32).toString('hex')];
const ONLY_K1: AnswerEncryption = { currentKeyId: 'k1', keys: { k1 } };
const ROTATED: AnswerEncryption = { currentKeyId: 'k2', keys: { k1, k2 } };
const ONLY_K2: AnswerEncryption = { currentKeyId: 'k2', keys: { k2 } };

/** A customer's e-mail: what must never be found in clear in the table, events or errors. */
const SECRET = 'ada@example.com';
const answer = (n: number): StoredResponse => ({
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email: SECRET, n }),
});

let counter = 0;
function request(key = `k-${++counter}-${Math.random()}`) {
  return { tenantId: 'tenant', operation: 'pay', key, fingerprint: computeFingerprint('pay', {}) };
}

/** One request through an engine on a store with `encryption`: the handler's runs and the outcome. */
function run(
  encryption: AnswerEncryption | undefined,
  req: ReturnType<typeof request>,
  policy: OperationPolicy = {},
  events: IdempotencyEvent[] = [],
) {
  const idempotency = createIdempotency({
    store: createDrizzleStore(t.db, encryption ? { encryption } : {}),
    defaults: policy,
    onEvent: (e) => events.push(e),
  });
  let runs = 0;
  const outcome = idempotency.execute(req, async (exec) => {
    runs++;
    if (policy.mode !== 'atomic') return answer(runs);
    return t.db.transaction(async (tx) => {
      await exec.complete(tx, answer(runs));
      return answer(runs);
    });
  });
  return { outcome, runs: () => runs };
}

async function stored(key: string) {
  const [row] = await t.sql<{ response_body: string | null; response_key_id: string | null }[]>`
    select response_body, response_key_id from idempotency_keys where key = ${key}`;
  return row!;
}

describe('stored answers encrypted at rest (AES-256-GCM)', () => {
  for (const mode of ['leased', 'atomic'] as const) {
    it(`${mode}: the row holds ciphertext and its key id; a retry replays the clear answer`, async () => {
      const req = request();
      const first = run(ONLY_K1, req, { mode });
      expect((await first.outcome).kind).toBe('executed');
      const row = await stored(req.key);
      expect(row.response_key_id).toBe('k1');
      expect(row.response_body).not.toContain(SECRET);
      const again = run(ONLY_K1, req, { mode, precheck: true });
      expect(await again.outcome).toEqual({ kind: 'replayed', response: answer(1) });
      expect(again.runs()).toBe(0);
    });
  }

  it('every value gets its own IV: the same answer twice is stored as two ciphertexts', async () => {
    const [a, b] = [request(), request()];
    await run(ONLY_K1, a).outcome;
    await run(ONLY_K1, b).outcome;
    expect((await stored(a.key)).response_body).not.toBe((await stored(b.key)).response_body);
  });

  it('rotation: new answers use the current key, old ones stay readable while their key is given', async () => {
    const old = request();
    await run(ONLY_K1, old).outcome;
    const fresh = request();
    await run(ROTATED, fresh).outcome;
    expect((await stored(fresh.key)).response_key_id).toBe('k2');
    const replay = run(ROTATED, old);
    expect(await replay.outcome).toEqual({ kind: 'replayed', response: answer(1) });
  });

  it('a row whose key is missing is refused with a stable code: no replay, no second run', async () => {
    const req = request();
    await run(ONLY_K1, req).outcome;
    for (const encryption of [ONLY_K2, undefined]) {
      const events: IdempotencyEvent[] = [];
      const retry = run(encryption, req, {}, events);
      const error = await refusal(retry.outcome);
      expect(error.code).toBe('idempotency_answer_unreadable');
      expect(error.status).toBe(500);
      expect(error.message).toContain('"k1" is not configured');
      expect(retry.runs()).toBe(0);
      expect(JSON.stringify(events, (_k, v) => (v instanceof Error ? v.message : v))).not.toContain(
        SECRET,
      );
    }
    const atomic = run(ONLY_K2, req, { mode: 'atomic', precheck: true });
    expect((await refusal(atomic.outcome)).code).toBe('idempotency_answer_unreadable');
    expect(atomic.runs()).toBe(0);
  });

  it('a ciphertext copied to another row does not decrypt there', async () => {
    const [source, target] = [request(), request()];
    await run(ONLY_K1, source).outcome;
    await run(ONLY_K1, target).outcome;
    await t.sql`update idempotency_keys set response_body = s.response_body
      from idempotency_keys s where s.key = ${source.key} and idempotency_keys.key = ${target.key}`;
    const error = await refusal(run(ONLY_K1, target).outcome);
    expect(error.code).toBe('idempotency_answer_unreadable');
    expect(error.message).toContain('does not authenticate for this row');
  });

  it('answers stored in clear before encryption was turned on stay readable', async () => {
    const req = request();
    await run(undefined, req).outcome;
    expect(await stored(req.key)).toEqual({ response_body: answer(1).body, response_key_id: null });
    expect(await run(ONLY_K1, req).outcome).toEqual({ kind: 'replayed', response: answer(1) });
  });

  it('every transport maps the refusal from the one table: fetch answers problem+json 500', async () => {
    const req = request();
    await run(ONLY_K1, req).outcome;
    const handler = withIdempotency(async () => Response.json({ email: SECRET }), {
      idempotency: createIdempotency({ store: createDrizzleStore(t.db, { encryption: ONLY_K2 }) }),
      operation: 'pay',
      getTenantId: () => 'tenant',
    });
    const response = await handler(
      new Request('http://x/pay', { method: 'POST', headers: { 'idempotency-key': req.key } }),
    );
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body.code).toBe('idempotency_answer_unreadable');
  });

  it('the operator sees ciphertext unless it asks for decryption; reconciliation stores sealed', async () => {
    const req = request();
    await t.sql`insert into idempotency_keys (tenant_id, operation, key, fingerprint, state, expires_at)
      values ('tenant', 'pay', ${req.key}, ${req.fingerprint}, 'unknown', now() + interval '1 hour')`;
    await resolveUnknownKey(
      t.db,
      req,
      { outcome: 'completed', response: answer(7) },
      {
        encryption: ONLY_K1,
      },
    );
    expect((await stored(req.key)).response_key_id).toBe('k1');
    const operator = createKeyOperator(t.db, { encryption: ONLY_K1 });
    const asStored = await operator.inspect(req, { includeResponse: true });
    expect(asStored?.response?.keyId).toBe('k1');
    expect(asStored?.response?.body).not.toContain(SECRET);
    expect(JSON.stringify(await operator.list({ tenantId: 'tenant' }))).not.toContain(SECRET);
    const opened = await operator.inspect(req, { includeResponse: 'decrypted' });
    expect(opened?.response?.body).toBe(answer(7).body);
    const without = createKeyOperator(t.db);
    expect((await refusal(without.inspect(req, { includeResponse: 'decrypted' }))).code).toBe(
      'idempotency_answer_unreadable',
    );
  });

  it('refuses a configuration it cannot use, in one line', () => {
    expect(() =>
      createDrizzleStore(t.db, { encryption: { currentKeyId: 'k3', keys: { k1 } } }),
    ).toThrow('encryption.currentKeyId "k3" is not one of encryption.keys');
    expect(() =>
      createDrizzleStore(t.db, { encryption: { currentKeyId: 'k', keys: { k: randomBytes(16) } } }),
    ).toThrow('encryption key "k" is 16 bytes; AES-256 needs 32');
  });
});
