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

/**
 * Disarms faults: one by id, all of an account, or all. Returns how many. A fault that never
 * bit is deleted; one that bit is kept, disarmed (`remaining` 0), so its consumption
 * (`taken`) can still be read after the clear.
 */
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

/** One time a fault bit: when, on which call and which object. */
interface FaultUseRecord {
  /** The database's clock at the take (ISO). */
  used_at: string;
  /** `payment_intents.confirm`, ..., or `webhooks.deliver`. */
  operation: string;
  idempotency_key: string | null;
  /** The payment intent (`pi_`), refund (`re_`) or event (`evt_`) it hit; null if none yet. */
  object: string | null;
}

/** How often one fault bit (armed or since cleared). */
export interface FaultUse {
  id: string;
  account: string;
  kind: FaultKind;
  /** Requests (or webhook deliveries) that took the fault. */
  taken: number;
  /**
   * Of those, the ones its effect happened to (a replay that took an after-charge fault
   * charged nothing: taken, not applied). What "the fault bit" means.
   */
  applied: number;
  /** Uses left (0 once used up or cleared). */
  remaining: number;
  created: string;
  /** Its latest uses, newest first (at most the `limit` asked for). */
  uses: FaultUseRecord[];
}

/** How many uses per fault `GET /admin/faults/uses` lists unless asked (`limit`). */
const FAULT_USES_LIMIT = 20;

/**
 * Consumption per fault: every fault that bit, and every one still armed, with how many
 * requests it was applied to and its latest `limit` uses; `by_kind` sums them. A fault armed
 * and never matched shows `taken: 0` and no uses while armed and disappears when cleared.
 * Counts and uses are read in one snapshot, so they agree while faults keep biting.
 */
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
      const uses = await latestUses(
        tx,
        filter.accountId,
        filter.id,
        filter.limit ?? FAULT_USES_LIMIT,
      );
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

/** What one use of a fault hit: recorded with the use (see `fault_uses`). */
interface FaultUseTarget {
  /** The call (`payment_intents.confirm`), or `webhooks.deliver` for a webhook delivery. */
  operation: string;
  idempotencyKey: string | null;
  /** The payment intent, refund or event acted on; null until a create made it. */
  objectId: string | null;
}

/**
 * Takes one use of the oldest armed fault that matches, atomically: under concurrency
 * each use goes to exactly one request (`FOR UPDATE SKIP LOCKED` picks distinct rows or
 * waits on none), so "fail the next 3 requests" fails exactly 3. The same statement records
 * the use (`fault_uses`), so a use is on record if and only if it was counted.
 */
async function takeFault(
  db: ProcessorDatabase,
  accountId: string,
  kinds: readonly string[],
  method: string | null,
  subject: string,
  operation: StripeOperationName | null,
  target: FaultUseTarget,
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

/**
 * Names the object a create made on its fault's use, inside the create's transaction: a use
 * names the object the faulted request changed only if that change committed.
 */
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
  /** How long the touched object's reads and webhooks lag behind (0: they do not). */
  lagMs: number;
  /** The recorded use (`fault_uses.id`). */
  useId: number;
}

/** Every fault an API request can take: one at most, the oldest armed that matches. */
const MUTATION_FAULT_KINDS = [...REQUEST_FAULT_KINDS, ...LIMIT_FAULT_KINDS];

/** The request or limit fault (if any) that applies to this API request. */
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
 * Makes one object lag behind the write that just changed it, inside that write's
 * transaction (so no deliverer or reader sees it before the lag starts): for `lagMs`, reads
 * of the object by id answer 404 (a `not_found` fault on its path that expires) and its
 * pending webhooks wait. "Not found" then means "not visible yet", never "not charged".
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

/** The use of the read fault (`not_found`) that applies to this `GET`, if any (used up if so). */
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

/** The webhook faults (at most one of each kind) that apply to this delivery. */
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
