import { and, asc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { faults, faultUseRecords, webhookEvents } from '../db/schema/index.ts';
import { newObjectId } from '../stripe/object-ids.ts';
import {
  type FaultKind,
  type FaultView,
  LIMIT_FAULT_KINDS,
  type LimitFaultKind,
  READ_FAULT_KINDS,
  REQUEST_FAULT_KINDS,
  type RequestFaultKind,
  type StripeOperationName,
  WEBHOOK_DELIVERY_OPERATION,
  WEBHOOK_FAULT_KINDS,
  type WebhookFaultKind,
} from './fault-kinds.ts';

type FaultRow = typeof faults.$inferSelect;

export interface ArmFaultInput {
  accountId: string;
  kind: FaultKind;
  method?: string | null;
  pathPrefix?: string | null;
  /** The one API call to hit; null: any that method and path prefix match. */
  operation?: StripeOperationName | null;
  count: number;
  delayMs?: number | null;
  when?: 'before_charge' | 'after_charge' | null;
  /** After-charge request faults: how long the object's reads and webhooks lag behind. */
  lagMs?: number | null;
}

function toFaultView(row: FaultRow): FaultView {
  return {
    id: row.id,
    account: row.accountId,
    kind: row.kind as FaultKind,
    method: row.method,
    path_prefix: row.pathPrefix,
    operation: row.operation as StripeOperationName | null,
    remaining: row.remaining,
    delay_ms: row.delayMs,
    when: row.delayWhen as FaultView['when'],
    lag_ms: row.lagMs,
    expires: row.expiresAt?.toISOString() ?? null,
    created: row.createdAt.toISOString(),
  };
}

/** Arms a fault for the next `count` matching requests (or webhook deliveries). */
export async function armFault(db: ProcessorDatabase, input: ArmFaultInput): Promise<FaultView> {
  const [row] = await db
    .insert(faults)
    .values({
      id: newObjectId('fault'),
      accountId: input.accountId,
      kind: input.kind,
      method: input.method?.toUpperCase() ?? null,
      pathPrefix: input.pathPrefix ?? null,
      operation: input.operation ?? null,
      remaining: input.count,
      delayMs: input.delayMs ?? null,
      delayWhen: input.kind === 'delay' ? (input.when ?? 'after_charge') : null,
      lagMs: input.lagMs ?? null,
    })
    .returning();
  return toFaultView(row!);
}

export async function listFaults(db: ProcessorDatabase, accountId?: string): Promise<FaultView[]> {
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

/** Disarms faults and returns how many; one that bit is kept (`remaining` 0) so its uses stay readable. */
export async function clearFaults(
  db: ProcessorDatabase,
  filter: { accountId?: string; id?: string },
): Promise<number> {
  const where = and(
    filter.accountId ? eq(faults.accountId, filter.accountId) : undefined,
    filter.id ? eq(faults.id, filter.id) : undefined,
  );
  const deleted = await db
    .delete(faults)
    .where(and(where, eq(faults.taken, 0)))
    .returning({ id: faults.id });
  const disarmed = await db
    .update(faults)
    .set({ remaining: 0 })
    .where(and(where, gt(faults.taken, 0), gt(faults.remaining, 0)))
    .returning({ id: faults.id });
  return deleted.length + disarmed.length;
}

interface FaultUseRecord {
  used_at: string;
  operation: string;
  idempotency_key: string | null;
  /** The payment intent, refund or event it hit; null if none yet. */
  object: string | null;
}

/** How often one fault bit (armed or since cleared). */
export interface FaultUse {
  id: string;
  account: string;
  kind: FaultKind;
  taken: number;
  /** Of those taken, the ones its effect happened to (what "the fault bit" means). */
  applied: number;
  remaining: number;
  created: string;
  /** Its latest uses, newest first. */
  uses: FaultUseRecord[];
}

/** Consumption per fault, counts and latest uses read in one snapshot so they agree. */
export function faultUses(
  db: ProcessorDatabase,
  filter: { accountId?: string; id?: string; limit?: number } = {},
): Promise<{
  data: FaultUse[];
  by_kind: Record<string, number>;
  applied_by_kind: Record<string, number>;
}> {
  return db.transaction(
    async (tx) => {
      const rows = await tx
        .select({
          fault: faults,
          applied: sql<number>`(select count(*)::int from fault_uses as used
            where used.fault_id = "faults"."id" and used.applied_at is not null)`,
        })
        .from(faults)
        .where(
          and(
            filter.accountId ? eq(faults.accountId, filter.accountId) : undefined,
            filter.id ? eq(faults.id, filter.id) : undefined,
          ),
        )
        .orderBy(asc(faults.createdAt));
      const uses = await latestUses(tx, filter.accountId, filter.id, filter.limit ?? 20);
      const byKind: Record<string, number> = {};
      const appliedByKind: Record<string, number> = {};
      for (const { fault, applied } of rows) {
        byKind[fault.kind] = (byKind[fault.kind] ?? 0) + fault.taken;
        appliedByKind[fault.kind] = (appliedByKind[fault.kind] ?? 0) + Number(applied);
      }
      return {
        data: rows.map(({ fault, applied }) => ({
          id: fault.id,
          account: fault.accountId,
          kind: fault.kind as FaultKind,
          taken: fault.taken,
          applied: Number(applied),
          remaining: fault.remaining,
          created: fault.createdAt.toISOString(),
          uses: uses.get(fault.id) ?? [],
        })),
        by_kind: byKind,
        applied_by_kind: appliedByKind,
      };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** The newest `limit` uses of each fault (of one account or one fault), by fault id. */
async function latestUses(
  db: ProcessorTransaction,
  accountId: string | undefined,
  faultId: string | undefined,
  limit: number,
): Promise<Map<string, FaultUseRecord[]>> {
  const rows = await db.execute<{
    fault_id: string;
    used_at: Date | string;
    operation: string;
    idempotency_key: string | null;
    object_id: string | null;
  }>(sql`
    select fault_id, used_at, operation, idempotency_key, object_id from (
      select *, row_number() over (partition by fault_id order by id desc) as n
      from ${faultUseRecords}
      where (${accountId ?? null}::text is null or account_id = ${accountId ?? null})
        and (${faultId ?? null}::text is null or fault_id = ${faultId ?? null})
    ) newest
    where n <= ${limit}
    order by id desc`);
  const byFault = new Map<string, FaultUseRecord[]>();
  for (const r of rows) {
    const list = byFault.get(r.fault_id) ?? [];
    list.push({
      used_at: new Date(r.used_at).toISOString(),
      operation: r.operation,
      idempotency_key: r.idempotency_key,
      object: r.object_id,
    });
    byFault.set(r.fault_id, list);
  }
  return byFault;
}

/**
 * Takes one use of the oldest matching armed fault: `FOR UPDATE SKIP LOCKED` gives each use to
 * exactly one request, so "fail the next 3" fails exactly 3, and the same statement records
 * the use, so a use is on record if and only if it was counted.
 */
async function takeFault(
  db: ProcessorDatabase,
  accountId: string,
  kinds: readonly string[],
  method: string | null,
  subject: string,
  operation: StripeOperationName | null,
  target: { operation: string; idempotencyKey: string | null; objectId: string | null },
): Promise<(FaultRow & { useId: number }) | undefined> {
  const rows = await db.execute<{ id: string; use_id: string }>(sql`
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
      returning id, account_id, kind
    ), used as (
      insert into ${faultUseRecords} (fault_id, account_id, kind, operation, idempotency_key, object_id)
      select id, account_id, kind, ${target.operation}, ${target.idempotencyKey}, ${target.objectId}
      from taken
      returning id
    )
    select taken.id, used.id as use_id from taken, used`);
  const taken = rows[0];
  if (!taken) return undefined;
  const [row] = await db.select().from(faults).where(eq(faults.id, taken.id));
  return row && { ...row, useId: Number(taken.use_id) };
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

export interface TakenRequestFault {
  kind: RequestFaultKind | LimitFaultKind;
  delayMs: number;
  when: 'before_charge' | 'after_charge';
  lagMs: number;
  useId: number;
}

const MUTATION_FAULT_KINDS = [...REQUEST_FAULT_KINDS, ...LIMIT_FAULT_KINDS];

export async function takeRequestFault(
  db: ProcessorDatabase,
  accountId: string,
  method: string,
  path: string,
  operation: StripeOperationName,
  use: { idempotencyKey: string | null; objectId: string | null },
): Promise<TakenRequestFault | undefined> {
  const upper = method.toUpperCase();
  const row = await takeFault(db, accountId, MUTATION_FAULT_KINDS, upper, path, operation, {
    operation,
    ...use,
  });
  if (!row) return undefined;
  return {
    kind: row.kind as TakenRequestFault['kind'],
    delayMs: row.delayMs ?? 0,
    when: (row.delayWhen as 'before_charge' | 'after_charge' | null) ?? 'after_charge',
    lagMs: row.lagMs ?? 0,
    useId: row.useId,
  };
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
  await tx.insert(faults).values({
    id: newObjectId('fault'),
    accountId: target.accountId,
    kind: 'not_found',
    method: 'GET',
    pathPrefix: target.path,
    // Every read until it expires.
    remaining: 2_147_483_647,
    expiresAt: lag,
  });
  await tx.execute(sql`
    update ${webhookEvents} set next_attempt_at = greatest(next_attempt_at, ${lag})
    where account_id = ${target.accountId} and delivered_at is null
      and (payload::jsonb)->'data'->'object'->>'id' = ${target.objectId}`);
}

export async function takeReadFault(
  db: ProcessorDatabase,
  accountId: string,
  path: string,
  operation: StripeOperationName,
  objectId: string | null,
): Promise<number | undefined> {
  const use = { operation, idempotencyKey: null, objectId };
  return (await takeFault(db, accountId, READ_FAULT_KINDS, 'GET', path, operation, use))?.useId;
}

export async function takeWebhookFaults(
  db: ProcessorDatabase,
  accountId: string,
  event: { type: string; id: string },
): Promise<{ kind: WebhookFaultKind; delayMs: number; useId: number }[]> {
  const taken: { kind: WebhookFaultKind; delayMs: number; useId: number }[] = [];
  const use = { operation: WEBHOOK_DELIVERY_OPERATION, idempotencyKey: null, objectId: event.id };
  for (const kind of WEBHOOK_FAULT_KINDS) {
    const row = await takeFault(db, accountId, [kind], null, event.type, null, use);
    if (row) taken.push({ kind, delayMs: row.delayMs ?? 0, useId: row.useId });
  }
  return taken;
}
