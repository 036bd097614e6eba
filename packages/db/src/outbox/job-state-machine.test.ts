import { runStatement, type SqlRunner } from '@once/postgres/sql';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxJobStatus } from '../schema/outbox.ts';
import type { TestDatabase } from '../testing/test-database.ts';
import { claimDueJobs } from './claim.ts';
import { enqueueOutboxJob } from './enqueue.ts';
import { finishJob, lockHeldJob, renewLease, rescheduleJob } from './held-job.ts';
import { isClaimable, isLiveJob } from './job-sql.ts';
import { canMoveJob, liveJobStatuses } from './job-states.ts';
import { createOutboxTestDatabase, OUTBOX_TEST_TENANT as TENANT } from './outbox-test-database.ts';

/*
 * The outbox state machine against real PostgreSQL: random sequences of claims, lease
 * expiries, renewals, reschedules and finishes, by current and stale holders, on either
 * driver, checked step by step against a model written from the rules (who may move a job
 * where), and every observed move against the transition table.
 */

let database: TestDatabase;

beforeAll(async () => {
  database = await createOutboxTestDatabase('outbox_state_machine');
}, 60_000);
afterAll(async () => {
  await database?.drop();
});

type Command =
  | { op: 'claim' }
  | { op: 'expire_lease' }
  | { op: 'renew'; token: number }
  | { op: 'lock'; token: number }
  | { op: 'finish'; token: number; status: 'done' | 'dead' }
  | { op: 'reschedule'; token: number; due: boolean; countAttempt: boolean };

/** What the rules say the job is: its state, its claims' tokens (the last is current), attempts. */
interface Model {
  status: OutboxJobStatus;
  tokens: string[];
  attempts: number;
  /** A pending job's `run_after` has come; a running job's lease has ended. */
  due: boolean;
}

/** Which of the issued tokens a command uses: any of them, so stale holders act too. */
const token = fc.nat({ max: 5 });
// Claims and expiries weigh more: a stale holder exists only after a takeover.
const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.constant({ op: 'claim' as const }), weight: 3 },
  { arbitrary: fc.constant({ op: 'expire_lease' as const }), weight: 3 },
  fc.record({ op: fc.constant('renew' as const), token }),
  fc.record({ op: fc.constant('lock' as const), token }),
  fc.record({
    op: fc.constant('finish' as const),
    token,
    status: fc.constantFrom('done' as const, 'dead' as const),
  }),
  fc.record({
    op: fc.constant('reschedule' as const),
    token,
    due: fc.boolean(),
    countAttempt: fc.boolean(),
  }),
);

interface Row {
  status: OutboxJobStatus;
  attempts: number;
  lock_token: string | null;
  locked_by: string | null;
  live: boolean;
  claimable: boolean;
}

async function readJob(db: SqlRunner, id: string): Promise<Row> {
  const [row] = await runStatement<Row>(
    db,
    sql`select status, attempts, lock_token, locked_by,
               ${isLiveJob('job')} as live, ${isClaimable('job')} as claimable
        from outbox_jobs as job where id = ${id}`,
  );
  if (!row) throw new Error(`job ${id} is gone`);
  return row;
}

describe('the outbox job state machine', () => {
  it('only a claim of a due job moves it, and only its current holder moves it on', async () => {
    const { sql: pg, db: drizzle } = database.client;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(command, fc.boolean()), { minLength: 1, maxLength: 14 }),
        async (steps) => {
          const id = `job_${++run}`;
          // One job at a time: a claim must find this one or nothing.
          await pg`delete from outbox_jobs`;
          await enqueueOutboxJob(
            drizzle,
            {
              tenantId: TENANT,
              id,
              kind: 'charge_payment',
              paymentId: `pay_${run}`,
              downstreamKey: `charge:pay_${run}`,
              payload: { amount: 100, currency: 'usd' },
            },
            { notify: false },
          );
          const model: Model = { status: 'pending', tokens: [], attempts: 0, due: true };
          for (const [step, onDrizzle] of steps) {
            const db: SqlRunner = onDrizzle ? drizzle : pg;
            const before = model.status;
            const current = model.tokens.at(-1);
            let moved = false;
            const holder = (i: number) => ({
              tenantId: TENANT,
              id,
              lockToken: model.tokens[i % Math.max(1, model.tokens.length)] ?? 'never-claimed',
            });
            const holds = (i: number) =>
              model.status === 'running' && holder(i).lockToken === current;
            switch (step.op) {
              case 'claim': {
                const claims = await claimDueJobs(db, {
                  workerId: `w${model.tokens.length}`,
                  leaseMs: 60_000,
                  limit: 5,
                  kinds: ['charge_payment'],
                });
                const mayClaim = model.status === 'pending' || model.status === 'running';
                expect(claims.length).toBe(mayClaim && model.due ? 1 : 0);
                const [claim] = claims;
                if (claim) {
                  expect(claim.takeover).toBe(model.status === 'running');
                  expect(claim.job.lockToken).not.toBe(current);
                  expect(claim.job.attempts).toBe(model.attempts + 1);
                  model.tokens.push(claim.job.lockToken);
                  model.attempts++;
                  model.status = 'running';
                  model.due = false;
                  moved = true;
                }
                break;
              }
              case 'expire_lease':
                await pg`update outbox_jobs set locked_until = now() - interval '1 second'
                         where id = ${id} and status = 'running'`;
                if (model.status === 'running') model.due = true;
                break;
              case 'renew': {
                const expected = holds(step.token);
                expect(await renewLease(db, holder(step.token), 60_000)).toBe(expected);
                if (expected) model.due = false;
                moved = expected;
                break;
              }
              case 'lock': {
                const expected = holds(step.token);
                const locked = await (onDrizzle
                  ? drizzle.transaction((tx) => lockHeldJob(tx, holder(step.token)))
                  : pg.begin((tx) => lockHeldJob(tx, holder(step.token))));
                expect(locked).toBe(expected);
                break;
              }
              case 'finish': {
                const expected = holds(step.token);
                expect(await finishJob(db, holder(step.token), step.status, 'x')).toBe(expected);
                if (expected) model.status = step.status;
                moved = expected;
                break;
              }
              case 'reschedule': {
                const expected = holds(step.token);
                const rescheduled = await rescheduleJob(
                  db,
                  holder(step.token),
                  step.due ? 0 : 3_600_000,
                  'x',
                  {
                    countAttempt: step.countAttempt,
                  },
                );
                expect(rescheduled).toBe(expected);
                if (expected) {
                  model.status = 'pending';
                  model.due = step.due;
                  if (!step.countAttempt) model.attempts = Math.max(0, model.attempts - 1);
                }
                moved = expected;
                break;
              }
            }
            const row = await readJob(db, id);
            expect(row.status).toBe(model.status);
            expect(row.attempts).toBe(model.attempts);
            // Somebody holds a job exactly while it runs, and it is the last claimer.
            expect(row.lock_token).toBe(model.status === 'running' ? model.tokens.at(-1) : null);
            expect(row.locked_by === null).toBe(model.status !== 'running');
            expect(row.live).toBe(liveJobStatuses.includes(model.status));
            const claimable =
              (model.status === 'pending' || model.status === 'running') && model.due;
            expect(row.claimable).toBe(claimable);
            // Every move the SQL made is one the transition table allows; a refused one is none.
            if (moved) expect(canMoveJob(before, row.status)).toBe(true);
            else expect(row.status).toBe(before);
          }
        },
      ),
      { numRuns: 100 },
    );
  }, 120_000);
});
