import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { ProcessorDatabase } from '../db/client.ts';
import { faults } from '../db/schema/index.ts';
import { newObjectId } from '../payments/object-ids.ts';
import {
  type FaultKind,
  type FaultView,
  READ_FAULT_KINDS,
  REQUEST_FAULT_KINDS,
  type RequestFaultKind,
  WEBHOOK_FAULT_KINDS,
  type WebhookFaultKind,
} from './fault-kinds.ts';

type FaultRow = typeof faults.$inferSelect;

export interface ArmFaultInput {
  accountId: string;
  kind: FaultKind;
  method?: string | null;
  pathPrefix?: string | null;
  count: number;
  delayMs?: number | null;
  when?: 'before_charge' | 'after_charge' | null;
}

export function toFaultView(row: FaultRow): FaultView {
  return {
    id: row.id,
    account: row.accountId,
    kind: row.kind as FaultKind,
    method: row.method,
    path_prefix: row.pathPrefix,
    remaining: row.remaining,
    delay_ms: row.delayMs,
    when: row.delayWhen as FaultView['when'],
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
      remaining: input.count,
      delayMs: input.delayMs ?? null,
      delayWhen: input.kind === 'delay' ? (input.when ?? 'after_charge') : null,
    })
    .returning();
  return toFaultView(row!);
}

export async function listFaults(db: ProcessorDatabase, accountId?: string): Promise<FaultView[]> {
  const rows = await db
    .select()
    .from(faults)
    .where(and(gt(faults.remaining, 0), accountId ? eq(faults.accountId, accountId) : undefined))
    .orderBy(asc(faults.createdAt));
  return rows.map(toFaultView);
}

/** Disarms faults: one by id, all of an account, or all. Returns how many. */
export async function clearFaults(
  db: ProcessorDatabase,
  filter: { accountId?: string; id?: string },
): Promise<number> {
  const rows = await db
    .delete(faults)
    .where(
      and(
        filter.accountId ? eq(faults.accountId, filter.accountId) : undefined,
        filter.id ? eq(faults.id, filter.id) : undefined,
      ),
    )
    .returning({ id: faults.id });
  return rows.length;
}

/**
 * Takes one use of the oldest armed fault that matches, atomically: under concurrency
 * each use goes to exactly one request (`FOR UPDATE SKIP LOCKED` picks distinct rows or
 * waits on none), so "fail the next 3 requests" fails exactly 3.
 */
async function takeFault(
  db: ProcessorDatabase,
  accountId: string,
  kinds: readonly string[],
  method: string | null,
  subject: string,
): Promise<FaultRow | undefined> {
  const rows = await db.execute<{ id: string }>(sql`
    update ${faults} set remaining = remaining - 1
    where id = (
      select id from ${faults}
      where account_id = ${accountId}
        and remaining > 0
        and kind in ${sql.raw(`(${kinds.map((k) => `'${k}'`).join(',')})`)}
        and (method is null or ${method}::text is null or method = ${method})
        and (path_prefix is null or starts_with(${subject}, path_prefix))
      order by created_at
      limit 1
      for update skip locked
    )
    returning id`);
  const id = rows[0]?.id;
  if (!id) return undefined;
  const [row] = await db.select().from(faults).where(eq(faults.id, id));
  return row;
}

export interface TakenRequestFault {
  kind: RequestFaultKind;
  delayMs: number;
  when: 'before_charge' | 'after_charge';
}

/** The request fault (if any) that applies to this API request. */
export async function takeRequestFault(
  db: ProcessorDatabase,
  accountId: string,
  method: string,
  path: string,
): Promise<TakenRequestFault | undefined> {
  const row = await takeFault(db, accountId, REQUEST_FAULT_KINDS, method.toUpperCase(), path);
  if (!row) return undefined;
  return {
    kind: row.kind as RequestFaultKind,
    delayMs: row.delayMs ?? 0,
    when: (row.delayWhen as 'before_charge' | 'after_charge' | null) ?? 'after_charge',
  };
}

/** Whether a read fault (`not_found`) applies to this `GET` (it is used up if so). */
export async function takeReadFault(
  db: ProcessorDatabase,
  accountId: string,
  path: string,
): Promise<boolean> {
  return (await takeFault(db, accountId, READ_FAULT_KINDS, 'GET', path)) !== undefined;
}

/** The webhook faults (at most one of each kind) that apply to this delivery. */
export async function takeWebhookFaults(
  db: ProcessorDatabase,
  accountId: string,
  eventType: string,
): Promise<{ kind: WebhookFaultKind; delayMs: number }[]> {
  const taken: { kind: WebhookFaultKind; delayMs: number }[] = [];
  for (const kind of WEBHOOK_FAULT_KINDS) {
    const row = await takeFault(db, accountId, [kind], null, eventType);
    if (row) taken.push({ kind, delayMs: row.delayMs ?? 0 });
  }
  return taken;
}
