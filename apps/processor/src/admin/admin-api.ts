import { timingSafeEqual } from 'node:crypto';
import { configuredHostNames, HOST_NOT_ALLOWED, hostAllowed } from '@once/env';
import { and, asc, eq, sql } from 'drizzle-orm';
import { type Context, Hono } from 'hono';
import type { ProcessorDatabase } from '../db/client.ts';
import { accounts, ledgerEntries } from '../db/schema/index.ts';
import {
  FAULT_KINDS,
  type FaultKind,
  isReadFaultKind,
  isRequestFaultKind,
  isWebhookFaultKind,
  MUTATING_OPERATIONS,
  READ_OPERATIONS,
  type StripeOperationName,
} from '../faults/fault-kinds.ts';
import { armFault, clearFaults, faultUses, listFaults } from '../faults/fault-store.ts';
import { parseFormParams } from '../stripe/form-params.ts';
import type { WebhookTarget } from '../webhooks/webhook-deliverer.ts';
import { AdminError, adminError, readAdminLimit } from './admin-error.ts';
import { registerWebhookEventRoutes } from './webhook-events-admin.ts';

export interface AdminApiOptions {
  db: ProcessorDatabase;
  adminToken: string;
  /** Where a resend goes (the deliverer's endpoint). */
  webhook: WebhookTarget;
  /** PROCESSOR_PUBLIC_URL: its host is one the admin answers to. */
  publicUrl?: string;
  log: (line: string) => void;
}

/**
 * The operator/test surface under `/admin`, guarded by `X-Admin-Token` (or Bearer) and
 * answered only to a `Host` that is the processor's.
 */
export function createAdminApi({ db, adminToken, webhook, publicUrl, log }: AdminApiOptions): Hono {
  const app = new Hono();
  const ownNames = configuredHostNames([publicUrl], undefined);

  app.use('/admin/*', async (c, next) => {
    // A page on a rebound name must not reach the fault switches from a browser on this
    // machine, token or not: refused before the token is even looked at.
    const host = c.req.header('host');
    if (!hostAllowed(host, ownNames)) {
      return Response.json(
        {
          error: {
            code: HOST_NOT_ALLOWED,
            message: `The admin API does not answer to Host ${JSON.stringify(host ?? '')}: use its address, localhost or PROCESSOR_PUBLIC_URL.`,
          },
        },
        { status: 403 },
      );
    }
    const given =
      c.req.header('x-admin-token') ?? c.req.header('authorization')?.replace(/^Bearer\s+/i, '');
    if (!given || !sameSecret(given, adminToken)) {
      return adminError(new AdminError(401, 'Missing or wrong X-Admin-Token.'));
    }
    await next();
  });
  app.onError((error, c) => {
    if (error instanceof AdminError) return adminError(error);
    if (error instanceof SyntaxError) return adminError(new AdminError(400, 'Body must be JSON.'));
    log(`admin error on ${c.req.method} ${c.req.path}: ${String(error)}`);
    return Response.json({ error: { message: 'Internal error' } }, { status: 500 });
  });

  app.post('/admin/accounts', async (c) => {
    const body = (await c.req.json()) as { id?: unknown; secret_key?: unknown };
    if (typeof body.id !== 'string' || !/^acct_[A-Za-z0-9_]{1,64}$/.test(body.id)) {
      throw new AdminError(400, 'id must look like acct_<letters, digits, _>.');
    }
    if (
      typeof body.secret_key !== 'string' ||
      !/^sk_test_[A-Za-z0-9_]{1,100}$/.test(body.secret_key)
    ) {
      throw new AdminError(400, 'secret_key must look like sk_test_<letters, digits, _>.');
    }
    const inserted = await db
      .insert(accounts)
      .values({ id: body.id, secretKey: body.secret_key })
      .onConflictDoNothing()
      .returning();
    if (inserted.length === 0) {
      const [existing] = await db.select().from(accounts).where(eq(accounts.id, body.id));
      if (existing?.secretKey !== body.secret_key) {
        throw new AdminError(409, 'That account id or secret key is already taken.');
      }
    }
    log(`admin: account ${body.id} ${inserted.length ? 'created' : 'already existed'}`);
    return c.json({ id: body.id, secret_key: body.secret_key }, inserted.length ? 201 : 200);
  });

  app.get('/admin/accounts', async (c) => {
    const rows = await db.select().from(accounts).orderBy(asc(accounts.id));
    return c.json({ data: rows.map((r) => ({ id: r.id, secret_key: r.secretKey })) });
  });

  registerFaultRoutes(app, db, log);

  app.get('/admin/ledger', async (c) => {
    const query = parseFormParams(new URL(c.req.url).search.slice(1));
    const filters = {
      account: ledgerEntries.accountId,
      payment_intent: ledgerEntries.paymentIntentId,
      idempotency_key: ledgerEntries.idempotencyKey,
      kind: ledgerEntries.kind,
    };
    const conditions = Object.entries(filters).flatMap(([name, column]) => {
      const value = query[name];
      return typeof value === 'string' && value !== '' ? [eq(column, value)] : [];
    });
    const metadata = query.metadata;
    if (metadata && typeof metadata === 'object' && !Array.isArray(metadata)) {
      conditions.push(sql`${ledgerEntries.metadata} @> ${JSON.stringify(metadata)}::jsonb`);
    }
    const rows = await db
      .select()
      .from(ledgerEntries)
      .where(and(...conditions))
      .orderBy(asc(ledgerEntries.seq));
    const data = rows.map((r) => ({
      seq: r.seq,
      account: r.accountId,
      kind: r.kind,
      payment_intent: r.paymentIntentId,
      charge: r.chargeId,
      refund: r.refundId,
      amount: r.amount,
      currency: r.currency,
      idempotency_key: r.idempotencyKey,
      metadata: r.metadata,
      created: r.createdAt.toISOString(),
    }));
    const charges = data.filter((d) => d.kind === 'charge');
    return c.json({
      data,
      charge_count: charges.length,
      charged_amount: charges.reduce((sum, d) => sum + d.amount, 0),
      refunded_amount: data
        .filter((d) => d.kind === 'refund')
        .reduce((sum, d) => sum + d.amount, 0),
    });
  });

  registerWebhookEventRoutes(app, { db, webhook, log });

  return app;
}

/** The fault switches: arm, list, consumption, clear. */
function registerFaultRoutes(app: Hono, db: ProcessorDatabase, log: (line: string) => void) {
  app.post('/admin/faults', async (c) => {
    const body = (await c.req.json()) as Record<string, unknown>;
    const account = await requireAccount(db, body.account);
    const kind = body.kind as FaultKind;
    if (!FAULT_KINDS.includes(kind))
      throw new AdminError(400, `Unknown fault kind: ${String(kind)}.`);
    const count = body.count ?? 1;
    if (!Number.isInteger(count) || (count as number) < 1) {
      throw new AdminError(400, 'count must be a positive integer.');
    }
    const delayMs = body.delay_ms ?? null;
    if ((kind === 'delay' || kind === 'slow_webhook') && !Number.isInteger(delayMs)) {
      throw new AdminError(400, `${kind} needs delay_ms (an integer).`);
    }
    const when = body.when ?? null;
    if (when !== null && when !== 'before_charge' && when !== 'after_charge') {
      throw new AdminError(400, "when must be 'before_charge' or 'after_charge'.");
    }
    const lagMs = body.lag_ms ?? null;
    if (lagMs !== null) {
      if (!Number.isInteger(lagMs) || (lagMs as number) < 1) {
        throw new AdminError(400, 'lag_ms must be a positive integer.');
      }
      if (!isRequestFaultKind(kind) || kind === 'fail_before_charge') {
        throw new AdminError(
          400,
          `lag_ms applies to faults that answer after the work: not ${kind}.`,
        );
      }
    }
    const fault = await armFault(db, {
      accountId: account,
      kind,
      method: optionalString(body.method, 'method')?.toUpperCase() ?? null,
      pathPrefix: optionalString(body.path_prefix ?? body.event_type_prefix, 'path_prefix'),
      operation: faultOperation(kind, optionalString(body.operation, 'operation')),
      remaining: count as number,
      delayMs: delayMs as number | null,
      delayWhen: kind === 'delay' ? (when ?? 'after_charge') : null,
      lagMs: lagMs as number | null,
    });
    log(
      `admin: armed ${fault.kind} x${fault.remaining} for ${fault.account} ${fault.operation ?? `${fault.method ?? '*'} ${fault.path_prefix ?? '*'}`}${fault.lag_ms ? ` lag ${fault.lag_ms} ms` : ''}`,
    );
    return c.json(fault, 201);
  });

  app.get('/admin/faults', async (c) => {
    return c.json({ data: await listFaults(db, c.req.query('account')) });
  });

  // Consumption: how many requests each fault bit (cleared faults that bit included) and its
  // latest uses, newest first (`limit` per fault, at most 100).
  const faultFilter = (c: Context) => ({
    accountId: c.req.query('account'),
    id: c.req.query('id'),
  });
  app.get('/admin/faults/uses', async (c) => {
    const limit = readAdminLimit(c.req.query('limit'));
    return c.json(await faultUses(db, { ...faultFilter(c), limit }));
  });

  app.delete('/admin/faults', async (c) => {
    const deleted = await clearFaults(db, faultFilter(c));
    log(`admin: cleared ${deleted} faults`);
    return c.json({ deleted });
  });
}

function sameSecret(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The operation a fault names, checked against the calls its kind can hit. */
function faultOperation(kind: string, operation: string | null): StripeOperationName | null {
  if (operation === null) return null;
  if (isWebhookFaultKind(kind)) {
    throw new AdminError(400, `operation does not apply to ${kind} (a webhook fault).`);
  }
  const known: readonly string[] = isReadFaultKind(kind) ? READ_OPERATIONS : MUTATING_OPERATIONS;
  if (!known.includes(operation)) {
    throw new AdminError(
      400,
      `Unknown operation for ${kind}: ${operation}. Known: ${known.join(', ')}.`,
    );
  }
  return operation as StripeOperationName;
}

function optionalString(value: unknown, name: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value === '')
    throw new AdminError(400, `${name} must be a string.`);
  return value;
}

async function requireAccount(db: ProcessorDatabase, account: unknown): Promise<string> {
  if (typeof account !== 'string') throw new AdminError(400, 'account is required.');
  const [row] = await db.select().from(accounts).where(eq(accounts.id, account));
  if (!row) throw new AdminError(404, `No such account: ${account}.`);
  return row.id;
}
