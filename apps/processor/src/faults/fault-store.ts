import { and, asc, eq, gt, isNull, or, type SQL, sql } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { faults, faultUseRecords, webhookEvents } from '../db/schema/index.ts';
import { newObjectId } from '../stripe/stripe-operation.ts';
import type { FaultKind, StripeOperationName } from './fault-kinds.ts';

type FaultRow = typeof faults.$inferSelect;
type FaultWhen = 'before_charge' | 'after_charge';

/** An armed fault as the admin API shows it. */
function toFaultView(row: FaultRow) {
  return {
    id: row.id,
    account: row.accountId,
    kind: row.kind as FaultKind,
    method: row.method,
    path_prefix: row.pathPrefix,
    operation: row.operation as StripeOperationName | null,
    remaining: row.remaining,
    delay_ms: row.delayMs,
    when: row.delayWhen as FaultWhen | null,
    lag_ms: row.lagMs,
    expires: row.expiresAt?.toISOString() ?? null,
    created: row.createdAt.toISOString(),
  };
}

/** Arms a fault for the next `remaining` matching requests (or webhook deliveries). */
export async function armFault(
  db: ProcessorDatabase | ProcessorTransaction,
  fault: Omit<typeof faults.$inferInsert, 'id' | 'expiresAt'> & { expiresAt?: SQL },
) {
  const [row] = await db
    .insert(faults)
    .values({ id: newObjectId('fault'), ...fault })
    .returning();
  return toFaultView(row!);
}

export async function listFaults(db: ProcessorDatabase, accountId?: string) {
  const rows = await db
    .select()
    .from(faults)
    .where(
      and(
        gt(faults.remaining, 0),
        or(isNull(faults.expiresAt), gt(faults.expiresAt, sql`now()`)),
        accountId ? eq(faults.accountId, accountId) : undefined,
      ),
    )
    .orderBy(asc(faults.createdAt));
  return rows.map(toFaultView);
}

type FaultFilter = { accountId?: string; id?: string };

const matching = (filter: FaultFilter) =>
  and(
    filter.accountId ? eq(faults.accountId, filter.accountId) : undefined,
    filter.id ? eq(faults.id, filter.id) : undefined,
  );

/** Disarms faults and returns how many; one that bit is kept (`remaining` 0) so its uses stay readable. */
export async function clearFaults(db: ProcessorDatabase, filter: FaultFilter): Promise<number> {
  const deleted = await db
    .delete(faults)
    .where(and(matching(filter), eq(faults.taken, 0)))
    .returning({ id: faults.id });
  const disarmed = await db
    .update(faults)
    .set({ remaining: 0 })
    .where(and(matching(filter), gt(faults.taken, 0), gt(faults.remaining, 0)))
    .returning({ id: faults.id });
  return deleted.length + disarmed.length;
}

/**
 * How often each fault bit (armed or since cleared): `taken`, `applied` (the ones its effect
 * happened to) and its newest `limit` uses, read in one snapshot so counts and uses agree.
 */
export function faultUses(db: ProcessorDatabase, filter: FaultFilter & { limit?: number } = {}) {
  return db.transaction(
    async (tx) => {
      const rows = await tx
        .select({
          fault: faults,
          applied: sql<number>`(select count(*)::int from fault_uses as used
            where used.fault_id = "faults"."id" and used.applied_at is not null)`,
        })
        .from(faults)
        .where(matching(filter))
        .orderBy(asc(faults.createdAt));
      const uses = await tx.execute<{
        fault_id: string;
        used_at: Date | string;
        operation: string;
        idempotency_key: string | null;
        object_id: string | null;
      }>(sql`
        select fault_id, used_at, operation, idempotency_key, object_id from (
          select *, row_number() over (partition by fault_id order by id desc) as n
          from ${faultUseRecords}
          where (${filter.accountId ?? null}::text is null or account_id = ${filter.accountId ?? null})
            and (${filter.id ?? null}::text is null or fault_id = ${filter.id ?? null})
        ) newest
        where n <= ${filter.limit ?? 20}
        order by id desc`);
      const data = rows.map(({ fault, applied }) => ({
        id: fault.id,
        account: fault.accountId,
        kind: fault.kind as FaultKind,
        taken: fault.taken,
        applied: Number(applied),
        remaining: fault.remaining,
        created: fault.createdAt.toISOString(),
        uses: uses
          .filter((u) => u.fault_id === fault.id)
          .map((u) => ({
            used_at: new Date(u.used_at).toISOString(),
            operation: u.operation,
            idempotency_key: u.idempotency_key,
            object: u.object_id,
          })),
      }));
      const byKind: Record<string, number> = {};
      const appliedByKind: Record<string, number> = {};
      for (const fault of data) {
        byKind[fault.kind] = (byKind[fault.kind] ?? 0) + fault.taken;
        appliedByKind[fault.kind] = (appliedByKind[fault.kind] ?? 0) + fault.applied;
      }
      return {
        data,
        by_kind: byKind,
        applied_by_kind: appliedByKind,
      };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** A fault one request or delivery took, and the record of that use. */
interface TakenFault {
  kind: FaultKind;
  delayMs: number;
  when: FaultWhen;
  lagMs: number;
  useId: number;
}

/**
 * Takes one use of the oldest armed fault of `kinds` matching the call: `FOR UPDATE SKIP
 * LOCKED` gives each use to exactly one request, so "fail the next 3" fails exactly 3, and the
 * same statement records the use, so a use is on record if and only if it was counted.
 */
export async function takeFault(
  db: ProcessorDatabase,
  match: {
    accountId: string;
    kinds: readonly FaultKind[];
    method: string | null;
    /** The request path, or a webhook's event type. */
    subject: string;
    operation: StripeOperationName | null;
  },
  use: { operation: string; idempotencyKey: string | null; objectId: string | null },
): Promise<TakenFault | undefined> {
  const { accountId, kinds, method, subject, operation } = match;
  const [row] = await db.execute<{
    kind: FaultKind;
    delay_ms: number | null;
    delay_when: FaultWhen | null;
    lag_ms: number | null;
    use_id: string;
  }>(sql`
    with taken as (
      update ${faults} set remaining = remaining - 1, taken = taken + 1
      where id = (
        select id from ${faults}
        where account_id = ${accountId}
          and remaining > 0
          and (expires_at is null or expires_at > now())
          and kind in ${sql.raw(`(${kinds.map((k) => `'${k}'`).join(',')})`)}
          and (method is null or ${method}::text is null or method = ${method})
          and (path_prefix is null or starts_with(${subject}, path_prefix))
          and (operation is null or operation = ${operation}::text)
        order by created_at
        limit 1
        for update skip locked
      )
      returning id, account_id, kind, delay_ms, delay_when, lag_ms
    ), used as (
      insert into ${faultUseRecords} (fault_id, account_id, kind, operation, idempotency_key, object_id)
      select id, account_id, kind, ${use.operation}, ${use.idempotencyKey}, ${use.objectId}
      from taken
      returning id
    )
    select taken.kind, taken.delay_ms, taken.delay_when, taken.lag_ms, used.id as use_id
    from taken, used`);
  if (!row) return undefined;
  return {
    kind: row.kind,
    delayMs: row.delay_ms ?? 0,
    when: row.delay_when ?? 'after_charge',
    lagMs: row.lag_ms ?? 0,
    useId: Number(row.use_id),
  };
}

/** Records that a taken fault's effect happened (`fault_uses.applied_at`), once. */
export async function markFaultApplied(db: ProcessorDatabase, useId: number): Promise<void> {
  await db
    .update(faultUseRecords)
    .set({ appliedAt: sql`now()` })
    .where(and(eq(faultUseRecords.id, useId), isNull(faultUseRecords.appliedAt)));
}

/** Inside the create's transaction: a use names the object only if its creation committed. */
export async function recordUseObject(
  tx: ProcessorTransaction,
  useId: number,
  objectId: string,
): Promise<void> {
  await tx
    .update(faultUseRecords)
    .set({ objectId })
    .where(and(eq(faultUseRecords.id, useId), isNull(faultUseRecords.objectId)));
}

/**
 * Inside the write's transaction, so nobody sees the object before its lag starts: for
 * `lagMs` its reads by id answer 404 and its webhooks wait ("not visible yet", never "not charged").
 */
export async function lagObject(
  tx: ProcessorTransaction,
  target: { accountId: string; path: string; objectId: string; lagMs: number },
): Promise<void> {
  const lag = sql`now() + make_interval(secs => ${target.lagMs / 1000})`;
  // Every read until it expires.
  await armFault(tx, {
    accountId: target.accountId,
    kind: 'not_found',
    method: 'GET',
    pathPrefix: target.path,
    remaining: 2_147_483_647,
    expiresAt: lag,
  });
  await tx.execute(sql`
    update ${webhookEvents} set next_attempt_at = greatest(next_attempt_at, ${lag})
    where account_id = ${target.accountId} and delivered_at is null
      and (payload::jsonb)->'data'->'object'->>'id' = ${target.objectId}`);
}
