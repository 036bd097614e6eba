import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { createDrizzleStore } from '../../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../../testing/test-database.ts';
import { type FetchAnswer, fetchIdempotency } from './fetch-idempotency.ts';

let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('fetch_on_answered');
});
afterAll(async () => {
  await t?.drop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const post = (key: string, amount: number) =>
  new Request('http://api/v1/charges', {
    method: 'POST',
    headers: { 'idempotency-key': key },
    body: JSON.stringify({ amount }),
  });

function guardedRoute(onAnswered: (answer: FetchAnswer, request: Request) => unknown) {
  const http = fetchIdempotency(createIdempotency({ store: createDrizzleStore(t.db) }), {
    onAnswered,
  });
  let runs = 0;
  return (request: Request) =>
    http.handle(request, { tenantId: 'acct_a', operation: 'charges.create' }, (exec) =>
      t.db.transaction(async (tx) => {
        runs++;
        const response = Response.json({ id: `ch_${runs}` }, { status: 201 });
        await exec.complete(tx, response);
        return response;
      }),
    );
}

describe('fetchIdempotency onAnswered', () => {
  it('tells an executed and a replayed answer, with the key and what it holds, before the answer is sent', async () => {
    const heard: FetchAnswer[] = [];
    let answered = false;
    const route = guardedRoute(async (answer) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      heard.push(answer);
      answered = true;
    });
    const first = await route(post('oa-1', 100));
    expect(answered).toBe(true);
    const replay = await route(post('oa-1', 100));
    expect([first.status, replay.status]).toEqual([201, 201]);
    expect(heard.map((a) => [a.outcome, a.tenantId, a.operation, a.key])).toEqual([
      ['executed', 'acct_a', 'charges.create', 'oa-1'],
      ['replayed', 'acct_a', 'charges.create', 'oa-1'],
    ]);
    expect(heard.map((a) => JSON.parse(a.response.body ?? 'null'))).toEqual([
      { id: 'ch_1' },
      { id: 'ch_1' },
    ]);
    expect(heard[0]!.fingerprint).toBe(heard[1]!.fingerprint);
  });

  it("is told of the key's refusal: a reused key's 422, with its code, the answer unchanged", async () => {
    const heard: FetchAnswer[] = [];
    const route = guardedRoute((answer) => heard.push(answer));
    await route(post('oa-2', 100));
    const reused = await route(post('oa-2', 999));
    expect(reused.status).toBe(422);
    expect(heard.map((a) => [a.outcome, a.key, a.refusal, a.response.status])).toEqual([
      ['executed', 'oa-2', undefined, 201],
      ['refused', 'oa-2', 'idempotency_key_reused', 422],
    ]);
  });

  it('cannot break the answer: what it throws is logged, and the request is answered and replayed as ever', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const route = guardedRoute(() => {
      throw new Error('timeline down');
    });
    const first = await route(post('oa-3', 100));
    const replay = await route(post('oa-3', 100));
    expect([first.status, replay.status]).toEqual([201, 201]);
    expect(await replay.json()).toEqual({ id: 'ch_1' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(logged).toHaveBeenCalledTimes(2);
  });
});
