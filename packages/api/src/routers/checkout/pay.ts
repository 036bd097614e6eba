import { randomUUID } from 'node:crypto';
import { OUTBOX_NOTIFY_CHANNEL, outboxJobs, payments } from '@once/db/schema';
import { sql } from 'drizzle-orm';
import { priceCart } from '../../checkout/price-cart.ts';
import type { Database, Transaction } from '../../database.ts';
import type { PayInput, PayResult } from './pay.types.ts';

/**
 * How `pay` finishes the caller's idempotency key: inside the payment's own transaction, so
 * the stored response exists if and only if the payment does. tRPC and REST each adapt their
 * idempotency execution to this (they store different envelopes for the same result).
 */
export interface PayIdempotency {
  /** The client's Idempotency-Key (the checkout intent), recorded on the payment. */
  readonly key: string;
  complete(tx: Transaction, result: PayResult): Promise<void>;
}

export interface PayContext {
  db: Database;
  /** From authentication, never from the input. */
  tenantId: string;
  /** The principal placing it (a session, an API key): a shopper may read only its own. */
  placedBy?: string;
  idempotency: PayIdempotency;
}

/** The downstream Idempotency-Key the worker sends to the processor for this payment. */
export function downstreamKeyFor(paymentId: string): string {
  return `once_pay_${paymentId}`;
}

function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Accepts a checkout: prices the cart from the catalogue and, in ONE transaction, writes the
 * payment (`processing`), the outbox job that will charge it, a NOTIFY to wake a worker
 * (delivered only on commit), and the idempotency key's stored response. Nothing leaves the
 * database here: the worker makes the processor call, so a lost response or a crash can
 * never leave a charge the database does not know about.
 *
 * @example
 * const result = await pay({ ctx: { db, tenantId: 'tenant_a', idempotency }, input: { lines: [{ productId: 'book_sre', quantity: 1 }] } });
 */
export async function pay({
  ctx,
  input,
}: {
  ctx: PayContext;
  input: PayInput;
}): Promise<PayResult> {
  return ctx.db.transaction(async (tx) => {
    const cart = await priceCart(tx, ctx.tenantId, input.lines);
    const paymentId = newId('pay');
    const downstreamKey = downstreamKeyFor(paymentId);
    const [payment] = await tx
      .insert(payments)
      .values({
        tenantId: ctx.tenantId,
        id: paymentId,
        status: 'processing',
        amount: cart.amount,
        currency: cart.currency,
        lines: cart.lines,
        customerEmail: input.customerEmail ?? null,
        placedBy: ctx.placedBy ?? null,
        idempotencyKey: ctx.idempotency.key,
        downstreamKey,
      })
      .returning();
    const jobId = newId('job');
    await tx.insert(outboxJobs).values({
      tenantId: ctx.tenantId,
      id: jobId,
      kind: 'charge_payment',
      paymentId,
      downstreamKey,
      // The worker reads `paymentMethod`; amount and currency are for operators reading jobs.
      payload: {
        amount: cart.amount,
        currency: cart.currency,
        ...(input.paymentMethod ? { paymentMethod: input.paymentMethod } : {}),
      },
    });
    // NOTIFY is transactional: listeners hear it only if this commits.
    await tx.execute(
      sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${JSON.stringify({ tenantId: ctx.tenantId, jobId })})`,
    );
    const result: PayResult = {
      paymentId,
      status: 'processing',
      amount: cart.amount,
      currency: cart.currency,
      lines: cart.lines,
      customerEmail: payment!.customerEmail,
      createdAt: payment!.createdAt.toISOString(),
    };
    await ctx.idempotency.complete(tx, result);
    return result;
  });
}
