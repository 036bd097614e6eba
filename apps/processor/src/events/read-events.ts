import { and, desc, eq, inArray, isNotNull, isNull, like, type SQL, sql } from 'drizzle-orm';
import { webhookEvents } from '../db/schema/index.ts';
import {
  type FormParams,
  readBoolean,
  readInteger,
  readListLimit,
  readObject,
  readString,
} from '../stripe/form-params.ts';
import { invalidParam } from '../stripe/stripe-error.ts';
import {
  afterCursor,
  loadOwned,
  type ReadOperation,
  stripeListPage,
} from '../stripe/stripe-operation.ts';

/** An event as it was sent: its frozen payload (the same bytes every delivery signs). */
const renderEvent = (row: { payload: string }): unknown => JSON.parse(row.payload);

/** `GET /v1/events/:id` */
export const retrieveEvent: ReadOperation = async (db, { account, pathParams }) => ({
  status: 200,
  body: renderEvent(
    await loadOwned(db, webhookEvents, {
      name: 'event',
      id: pathParams.id!,
      accountId: account.id,
    }),
  ),
});

/**
 * `type` (one name, or a group with `*` as a wildcard: `refund.*`) or `types[]` (up to 20
 * names), not both: Stripe's rules.
 */
function typeCondition(params: FormParams): SQL | undefined {
  const type = readString(params, 'type');
  const types = params.types;
  if (type !== undefined && types !== undefined) {
    throw invalidParam('types', 'You may pass either `type` or `types`, but not both.');
  }
  if (type !== undefined) {
    if (!type.includes('*')) return eq(webhookEvents.type, type);
    const pattern = type.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%');
    return like(webhookEvents.type, pattern);
  }
  if (types === undefined) return undefined;
  if (!Array.isArray(types) || types.length > 20 || types.some((t) => typeof t !== 'string')) {
    throw invalidParam('types', 'types must be an array of up to 20 event names.');
  }
  return inArray(webhookEvents.type, types as string[]);
}

/** `created` as a Unix time, or a range `created[gt|gte|lt|lte]` (seconds). */
function createdConditions(params: FormParams): SQL[] {
  const createdAt = sql`extract(epoch from ${webhookEvents.createdAt})::bigint`;
  if (typeof params.created === 'string') {
    return [sql`${createdAt} = ${readInteger(params, 'created')}`];
  }
  const range = readObject(params, 'created');
  if (!range) return [];
  const operators = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
  return Object.entries(operators).flatMap(([bound, operator]) => {
    const value = readInteger(range, bound);
    return value === undefined ? [] : [sql`${createdAt} ${sql.raw(operator)} ${value}`];
  });
}

/**
 * `GET /v1/events`, newest first. `delivery_success=false` lists the events still being
 * retried or given up on (Stripe: "still pending or have failed all delivery attempts"); with
 * one webhook endpoint here, "all webhooks delivered" is that one delivery.
 */
export const listEvents: ReadOperation = async (db, { account, params }) => {
  const limit = readListLimit(params);
  const conditions: (SQL | undefined)[] = [
    eq(webhookEvents.accountId, account.id),
    typeCondition(params),
    ...createdConditions(params),
  ];
  const delivered = readBoolean(params, 'delivery_success');
  if (delivered !== undefined) {
    conditions.push(
      delivered ? isNotNull(webhookEvents.deliveredAt) : isNull(webhookEvents.deliveredAt),
    );
  }
  const object = { name: 'event', accountId: account.id, params };
  conditions.push(await afterCursor(db, webhookEvents, object));
  const rows = await db
    .select()
    .from(webhookEvents)
    .where(and(...conditions))
    .orderBy(desc(webhookEvents.createdAt), desc(webhookEvents.id))
    .limit(limit + 1);
  return stripeListPage(rows, limit, renderEvent, '/v1/events');
};
