import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCommitNoticeWatch } from '../core/commit-outcome.ts';
import { createIdempotency } from '../core/engine.ts';
import { isIdempotencyError } from '../core/errors.ts';
import type { Execution } from '../core/execution.ts';
import type { OperationPolicy, StoredResponse } from '../core/types.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

// A COMMIT that ends ambiguously (the connection lost under it, or PostgreSQL's "canceling
// wait for synchronous replication" WARNING on a COMMIT that then reports success) is an
// unknown outcome: never the handler's 201, and the key is never released for a fresh run.
type Tx = TransactionOf<typeof t.db>;
let t: IdempotencyTestDatabase;
beforeAll(async () => {
  t = await createIdempotencyTestDatabase('commit_outcome');
  await t.sql`create table effects (key text)`;
});
afterAll(async () => {
  await t?.drop();
});

let counter = 0;
const CREATED: StoredResponse = { status: 201, headers: {}, body: '{"paid":true}' };
const lostConnection = () =>
  Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' });
/** What postgres.js hands `onnotice` when a COMMIT stops waiting for its standby. */
const SYNC_REP_CANCEL = {
  severity: 'WARNING',
  code: '01000',
  message: 'canceling wait for synchronous replication due to user request',
  detail:
    'The transaction has already committed locally, but might not have been replicated to the standby.',
};

function setup(mode: OperationPolicy['mode']) {
  const watch = createCommitNoticeWatch();
  const idempotency = createIdempotency<Tx>({
    store: createDrizzleStore(t.db) as never,
    defaults: { mode },
    unreplicatedCommits: watch.unreplicatedCommits,
  });
  const request = { tenantId: 't', operation: 'pay', key: `k-${++counter}`, fingerprint: 'f' };
  let runs = 0;
  /** Writes the effect and completes the key in one transaction; `after` runs before COMMIT. */
  const handler =
    (after?: () => void) =>
    (exec: Execution<Tx>): Promise<StoredResponse> =>
      t.db.transaction(async (tx) => {
        runs++;
        await tx.execute(sql`insert into effects values (${request.key})`);
        await exec.complete(tx as Tx, CREATED);
        after?.();
        return CREATED;
      });
  const effects = async () =>
    (await t.sql`select count(*)::int as n from effects where key = ${request.key}`)[0]?.n;
  const keyState = async () =>
    (await t.sql`select state from idempotency_keys where key = ${request.key}`)[0]?.state;
  return { idempotency, watch, request, handler, runs: () => runs, effects, keyState };
}

async function refusalOf(run: Promise<unknown>) {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isIdempotencyError(error, 'idempotency_outcome_unknown')).toBe(true);
  return error as { status: number; retryAfterSeconds?: number };
}

describe.each(['atomic', 'leased'] as const)(
  '%s mode: a COMMIT with an unknown outcome',
  (mode) => {
    it('a connection lost after the key was written answers 409 outcome unknown, and the retry re-checks', async () => {
      const s = setup(mode);
      // The transaction rolls back (nothing committed) but the caller only sees the lost connection.
      const refused = await refusalOf(
        s.idempotency.execute(
          s.request,
          s.handler(() => {
            throw lostConnection();
          }),
        ),
      );
      expect(refused.status).toBe(409);
      expect(await s.keyState()).not.toBe('released');
      // Nothing committed: the retry runs it once, and once only.
      const retry = await s.idempotency.execute(s.request, s.handler());
      expect(retry).toEqual({ kind: 'executed', response: CREATED });
      expect(s.runs()).toBe(2);
      expect(await s.effects()).toBe(1);
    });

    it('a connection lost under a COMMIT that did commit (a terminated replication wait) answers 409 outcome unknown, never a replay; the retry replays it', async () => {
      const s = setup(mode);
      // Committed on this server, then the connection ends before the COMMIT's answer: what the
      // server shows now may not be on the standby a failover promotes.
      const committedThenLost = async (exec: Execution<Tx>): Promise<StoredResponse> => {
        await s.handler()(exec);
        throw lostConnection();
      };
      const refused = await refusalOf(s.idempotency.execute(s.request, committedThenLost));
      expect(refused.status).toBe(409);
      expect(await s.keyState()).toBe('completed');
      const retry = await s.idempotency.execute(s.request, s.handler());
      expect(retry).toMatchObject({ kind: 'replayed', response: CREATED });
      expect(s.runs()).toBe(1);
      expect(await s.effects()).toBe(1);
    });

    it('a COMMIT that stopped waiting for its synchronous standby answers 409 outcome unknown; the retry replays it', async () => {
      const s = setup(mode);
      await refusalOf(
        s.idempotency.execute(
          s.request,
          s.handler(() => s.watch.onnotice(SYNC_REP_CANCEL)),
        ),
      );
      // Committed locally: the retry replays it, nothing runs twice.
      expect(await s.keyState()).toBe('completed');
      const retry = await s.idempotency.execute(s.request, s.handler());
      expect(retry).toMatchObject({ kind: 'replayed', response: CREATED });
      expect(s.runs()).toBe(1);
      expect(await s.effects()).toBe(1);
    });
  },
);

describe('leased mode: a connection lost after a phase was written', () => {
  // The handler writes its effect and advances the key in one transaction, then finishes
  // later; the retry resumes from the recovery point it finds.
  function phased(s: ReturnType<typeof setup>, cut: 'before COMMIT' | 'after COMMIT' | 'none') {
    return async (exec: Execution<Tx>): Promise<StoredResponse> => {
      if (exec.recoveryPoint === 'started') {
        await t.db.transaction(async (tx) => {
          await tx.execute(sql`insert into effects values (${s.request.key})`);
          await exec.advance(tx as Tx, 'charged');
          if (cut === 'before COMMIT') throw lostConnection();
        });
        if (cut === 'after COMMIT') throw lostConnection();
      }
      return CREATED;
    };
  }

  for (const cut of ['before COMMIT', 'after COMMIT'] as const) {
    it(`cut ${cut}: 409 outcome unknown, never the raw error; the same key's retry charges once`, async () => {
      const s = setup('leased');
      const refused = await refusalOf(s.idempotency.execute(s.request, phased(s, cut)));
      expect(refused.status).toBe(409);
      expect(await s.keyState()).toBe('in_progress');
      const retry = await s.idempotency.execute(s.request, phased(s, 'none'));
      expect(retry).toEqual({ kind: 'executed', response: CREATED });
      expect(await s.effects()).toBe(1);
    });
  }
});

describe('the commit notice watch', () => {
  it('counts only the synchronous-replication cancel warnings', () => {
    const watch = createCommitNoticeWatch();
    watch.onnotice({ message: 'there is no transaction in progress' });
    expect(watch.unreplicatedCommits()).toBe(0);
    watch.onnotice(SYNC_REP_CANCEL);
    watch.onnotice({
      message:
        'canceling the wait for synchronous replication and terminating connection due to administrator command',
    });
    expect(watch.unreplicatedCommits()).toBe(2);
  });
});
