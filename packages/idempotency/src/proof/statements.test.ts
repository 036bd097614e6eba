import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import type { IdempotencyOptions } from '../core/engine-context.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import type { StoredResponse } from '../core/types.ts';
import { computeFingerprint } from '../index.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * What a guarded request costs, counted in statements sent to Postgres (each is a round trip
 * and, inside a transaction, a wait): the guard's price without a timing. A statement added to
 * the hot path fails here before it shows up in a benchmark.
 */

let t: IdempotencyTestDatabase;
let client: postgres.Sql;
let db: ReturnType<typeof drizzle>;
const sent: string[] = [];

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('statements');
  await t.sql`create table business (id text primary key)`;
  // Its own client, so the log holds this client's statements only.
  client = postgres(t.url, {
    max: 4,
    onnotice: () => {},
    debug: (_connection, query) => sent.push(label(query)),
  });
  db = drizzle(client);
});
afterAll(async () => {
  await client?.end({ timeout: 1 });
  await t?.drop();
});

type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];

/** A short, stable name for a statement: enough to tell the guard's statements apart. */
function label(query: string): string {
  const q = query.replace(/\s+/g, ' ').trim().toLowerCase();
  if (q === 'begin' || q === 'commit' || q === 'rollback') return q;
  if (q.startsWith('with attempt as')) return 'reserve';
  if (q.startsWith('insert into idempotency_keys') && q.includes('do nothing'))
    return 'reserve new';
  if (q.startsWith('insert into business')) return 'business insert';
  if (q.startsWith('insert into idempotency_keys')) return 'key insert';
  if (q.startsWith('update idempotency_keys') && q.includes("state = 'completed'"))
    return 'complete';
  if (q.startsWith('select 1 from idempotency_keys')) return 'verification read';
  if (q.startsWith('select') && q.includes('from idempotency_keys')) return 'lookup';
  return q.slice(0, 40);
}

const response: StoredResponse = { status: 201, headers: {}, body: '{"ok":true}' };
let counter = 0;
const newKey = () => `statements-${++counter}-${Math.random()}`;

function engine(extra: Partial<IdempotencyOptions<Tx>> = {}) {
  return createIdempotency<Tx>({ store: createDrizzleStore(db) as never, ...extra });
}

/** The business transaction of a payment: one write, and the key completed inside it. */
const pay = (key: string) => (exec: Execution<Tx>) =>
  db.transaction(async (tx) => {
    await tx.execute(sql`insert into business values (${key})`);
    await exec.complete(tx, response);
    return response;
  });

/** The statements of one guarded request, after a warm-up that prepared them on the connection. */
async function statementsOf(run: (key: string) => Promise<unknown>): Promise<string[]> {
  await run(newKey());
  sent.length = 0;
  await run(newKey());
  return [...sent];
}

describe('statements per guarded request', () => {
  it('leased mode: the new key inserted, then the business transaction with the completion, and nothing after it', async () => {
    const idem = engine({ defaults: { precheck: false } });
    const statements = await statementsOf((key) =>
      idem.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, pay(key)),
    );
    // No verification read after the commit: the completion's UPDATE ... RETURNING proved this
    // holder's ownership inside the transaction that committed the effects.
    // A new key is one plain INSERT: the takeover statement runs only when the key exists.
    expect(statements).toEqual(['reserve new', 'begin', 'business insert', 'complete', 'commit']);
  });

  it('atomic mode, precheck: true: one read, then the business transaction with the key insert', async () => {
    const idem = engine({ defaults: { mode: 'atomic', precheck: true } });
    const statements = await statementsOf((key) =>
      idem.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, pay(key)),
    );
    expect(statements).toEqual(['lookup', 'begin', 'business insert', 'key insert', 'commit']);
  });

  it('atomic mode without the pre-check: the business transaction with the key insert, nothing else', async () => {
    const idem = engine({ defaults: { mode: 'atomic', precheck: false } });
    const statements = await statementsOf((key) =>
      idem.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, pay(key)),
    );
    expect(statements).toEqual(['begin', 'business insert', 'key insert', 'commit']);
  });

  it('atomic mode without the pre-check: a replay runs the transaction, which rolls back at the key, then one read answers', async () => {
    const idem = engine({ defaults: { mode: 'atomic', precheck: false } });
    const key = newKey();
    const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
    // Not the payment's own insert: a retry writes its business row under another id, as a
    // handler without a business-level uniqueness check would.
    const payOnce = (exec: Execution<Tx>) =>
      db.transaction(async (tx) => {
        await tx.execute(sql`insert into business values (${`${key}-${Math.random()}`})`);
        await exec.complete(tx, response);
        return response;
      });
    await idem.execute(request, payOnce);
    sent.length = 0;
    expect(await idem.execute(request, payOnce)).toEqual({ kind: 'replayed', response });
    expect(sent).toEqual(['begin', 'business insert', 'key insert', 'rollback', 'lookup']);
    const [row] = await t.sql`select count(*)::int as n from business where id like ${`${key}-%`}`;
    expect(row?.n).toBe(1);
  });

  it('atomic mode, adaptive pre-check (the default): reads at start, drops the read over first requests, takes it back in a retry storm', async () => {
    const idem = engine({ defaults: { mode: 'atomic' } });
    const run = (key: string) =>
      idem.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, pay(key));
    const withRead = ['lookup', 'begin', 'business insert', 'key insert', 'commit'];
    const withoutRead = ['begin', 'business insert', 'key insert', 'commit'];
    expect(await statementsOf(run)).toEqual(withRead);
    const finished: string[] = [];
    for (let i = 0; i < 40; i++) {
      finished.push(newKey());
      await run(finished.at(-1)!);
    }
    expect(await statementsOf(run)).toEqual(withoutRead);
    // Retries of finished keys: the first ones run the transaction (the business insert meets
    // the first attempt's row, so the handler fails before its key insert) and are answered by
    // a read of the key; within three, the read comes first again and answers alone.
    const retries: string[][] = [];
    for (const key of finished.slice(0, 5)) {
      sent.length = 0;
      expect((await run(key)).kind).toBe('replayed');
      retries.push([...sent]);
    }
    expect(retries.slice(0, 3)).toContainEqual(['begin', 'business insert', 'rollback', 'lookup']);
    expect(retries.slice(3)).toEqual([['lookup'], ['lookup']]);
  });

  it('a replay is one read in either mode: the business transaction does not start', async () => {
    for (const mode of ['leased', 'atomic'] as const) {
      const idem = engine({ defaults: { mode, precheck: true } });
      const key = newKey();
      const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
      await idem.execute(request, pay(key));
      sent.length = 0;
      expect((await idem.execute(request, pay(key))).kind).toBe('replayed');
      expect(sent).toEqual(['lookup']);
    }
  });

  it('leased mode without the read: the reservation answers a replay, after the new-key insert found the key (its row lock makes it a write transaction)', async () => {
    const idem = engine({ defaults: { precheck: false } });
    const key = newKey();
    const request = { tenantId: 't', operation: 'pay', key, fingerprint: 'fp' };
    await idem.execute(request, pay(key));
    sent.length = 0;
    expect((await idem.execute(request, pay(key))).kind).toBe('replayed');
    expect(sent).toEqual(['reserve new', 'reserve']);
  });

  it('leased mode, adaptive pre-check (the default): no read over first requests; in a retry storm the read answers without the reservation', async () => {
    const idem = engine();
    const run = (key: string) =>
      idem.execute({ tenantId: 't', operation: 'pay', key, fingerprint: 'fp' }, pay(key));
    const finished: string[] = [];
    for (let i = 0; i < 40; i++) {
      finished.push(newKey());
      await run(finished.at(-1)!);
    }
    expect(await statementsOf(run)).toEqual([
      'reserve new',
      'begin',
      'business insert',
      'complete',
      'commit',
    ]);
    const retries: string[][] = [];
    for (const key of finished.slice(0, 5)) {
      sent.length = 0;
      expect((await run(key)).kind).toBe('replayed');
      retries.push([...sent]);
    }
    // The first retry meets no read; within two, the read answers alone.
    expect(retries[0]).toEqual(['reserve new', 'reserve']);
    expect(retries.slice(2)).toEqual([['lookup'], ['lookup'], ['lookup']]);
  });
});

describe('a handler that swallows the rollback of the transaction it completed in', () => {
  it('leased: nothing committed, so the key is not completed with its answer and a later retry runs again', async () => {
    const idem = engine({ defaults: { leaseMs: 60_000, heartbeat: false } });
    const key = newKey();
    const request = {
      tenantId: 't',
      operation: 'pay',
      key,
      fingerprint: computeFingerprint('pay', 1),
    };
    const swallowing = async (exec: Execution<Tx>) => {
      try {
        await db.transaction(async (tx) => {
          await tx.execute(sql`insert into business values (${key})`);
          await exec.complete(tx, response);
          throw new Error('rolled back after complete');
        });
      } catch {
        // The handler's bug: it answers as if the transaction had committed.
      }
      return response;
    };
    expect((await idem.execute(request, swallowing)).kind).toBe('executed');
    expect(await t.sql`select 1 from business where id = ${key}`).toHaveLength(0);
    const [row] = await t.sql`select state from idempotency_keys where key = ${key}`;
    // Not `completed`: a replay would answer 201 for a payment that does not exist.
    expect(row?.state).toBe('in_progress');
    // Held until its lease ends (the same as a crashed holder's), then the retry runs.
    const busy = await idem.execute(request, pay(key)).catch((error: unknown) => error);
    expect(isIdempotencyError(busy, 'idempotency_key_in_use')).toBe(true);
    await t.sql`update idempotency_keys set locked_until = now() - interval '1 second' where key = ${key}`;
    expect((await idem.execute(request, pay(key))).kind).toBe('executed');
    expect(await t.sql`select 1 from business where id = ${key}`).toHaveLength(1);
  });
});
