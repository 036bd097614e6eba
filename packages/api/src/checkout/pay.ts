import { enqueueOutboxJob } from '@once/db/outbox';
import { recordPaymentEvents } from '@once/db/payment-events';
import { payments } from '@once/db/schema';
import { downstreamKeyFor, newJobId, newPaymentId } from '@once/payments';
import { retrySerializationFailures } from '@once/postgres';
import type { Database, Transaction } from '../database.ts';
import { refuseMoneyActionKey } from '../money-actions/bind-money-action-key.ts';
import { checkoutFingerprint } from './checkout-fingerprint.ts';
import {
  answerForExistingPayment,
  findPaymentByIdempotencyKey,
  inUseIfLockWaitTimesOut,
  payResultOf,
} from './existing-payment.ts';
import type { PayInput, PayResult } from './pay.types.ts';
import {
  createdPaymentEvents,
  type PayTransport,
  recordReplayedAttempt,
} from './pay-attempt-events.ts';
import { priceCart } from './price-cart.ts';

/**
 * How `pay` answered: `created` a new payment, or found the `existing` payment of this
 * (tenant, idempotency key) made by the same input (a retry, possibly over another transport or
 * after the key itself expired). Transports mark an `existing` answer as replayed.
 */
export type PayOrigin = 'created' | 'existing';

/**
 * How `pay` completes the caller's key: inside the payment's own transaction, so the stored
 * response exists if and only if the payment does (GraphQL's plugin stores after the commit and
 * falls back on the payment's uniqueness below).
 */
interface PayIdempotency {
  /** The client's Idempotency-Key (the checkout intent), recorded on the payment. */
  readonly key: string;
  complete(tx: Transaction, result: PayResult, origin: PayOrigin): Promise<void>;
}

export interface PayContext {
  db: Database;
  /** From authentication, never from the input. */
  tenantId: string;
  /** The principal placing it (a session, an API key): a shopper may read only its own. */
  placedBy?: string;
  idempotency: PayIdempotency;
  /** Where the attempt came from, for the payment's timeline. Default `trpc`. */
  transport?: PayTransport;
  /**
   * Send the NOTIFY that wakes a worker (default true). False on engines or poolers without
   * LISTEN/NOTIFY: the workers' polling finds the job (`ApiDependencies.outboxNotify`).
   */
  notifyOutbox?: boolean;
}

/**
 * Accepts a checkout: prices the cart from the catalogue and, in ONE transaction, writes the
 * payment (`processing`; `capture: 'manual'` only authorises), the outbox job that will charge
 * it with its NOTIFY (heard only on commit), and the key's stored response. Nothing leaves the
 * database here: the worker calls the processor, so a lost response or a crash never leaves a
 * charge the database does not know about.
 *
 * One payment per (tenant, idempotency key), for ever and on every transport: a unique index,
 * and an insert `ON CONFLICT DO NOTHING` that waits for a concurrent inserter. An existing
 * payment answers the same input (its stored fingerprint) as it is now and completes the
 * caller's key with it; another input is `idempotency_key_reused`, whatever became of the
 * key's own row.
 */
export async function pay({
  ctx,
  input,
}: {
  ctx: PayContext;
  input: PayInput;
}): Promise<PayResult> {
  const fingerprint = checkoutFingerprint(input);
  // A serialization failure (40001: the norm on SERIALIZABLE engines such as CockroachDB) or a
  // deadlock (40P01) rolled everything below back, the key's insert included: run it again.
  return retrySerializationFailures(() => payTransaction(ctx, input, fingerprint));
}

/** The one transaction of {@link pay}; safe to run again after the server rolled it back. */
function payTransaction(ctx: PayContext, input: PayInput, fingerprint: string): Promise<PayResult> {
  return ctx.db.transaction(async (tx) => {
    const key = ctx.idempotency.key;
    const transport = ctx.transport ?? 'trpc';
    const answerExisting = async (row: NonNullable<typeof found>) => {
      const result = answerForExistingPayment(row, fingerprint);
      await ctx.idempotency.complete(tx, result, 'existing');
      await recordReplayedAttempt(
        tx,
        { tenantId: ctx.tenantId, paymentId: row.id, key, transport },
        'payment',
      );
      return result;
    };
    const found = await findPaymentByIdempotencyKey(tx, ctx.tenantId, key);
    if (found) return answerExisting(found);
    await refuseMoneyActionKey(tx, ctx.tenantId, key);
    const cart = await priceCart(tx, ctx.tenantId, input.lines);
    const paymentId = newPaymentId();
    // From the checkout, not the payment: a payment re-created after its row was lost (an
    // acknowledged commit a failover dropped) replays the first charge at the processor.
    const downstreamKey = downstreamKeyFor(ctx.tenantId, key);
    const [payment] = await inUseIfLockWaitTimesOut(() =>
      tx
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
          idempotencyKey: key,
          requestFingerprint: fingerprint,
          downstreamKey,
          captureMethod: input.capture ?? 'automatic',
        })
        // Waits for a concurrent inserter of the same key; after its commit, no row here. No
        // conflict target: the downstream key, derived from the same (tenant, key), is unique
        // too, and a target arbitrates its own index only. An inserter that passed that check
        // before the other's row reached the key's index meets the row on the downstream key's
        // index instead, and a non-arbiter index raises unique_violation (23505): a 500.
        .onConflictDoNothing()
        .returning(),
    );
    if (!payment) {
      // Read committed: this new statement sees the row the concurrent inserter committed
      // (whichever unique index met it, key or downstream key, it is this key's payment).
      const winner = await findPaymentByIdempotencyKey(tx, ctx.tenantId, key);
      if (!winner) throw new Error(`payment of key ${key} conflicted but cannot be read`);
      return answerExisting(winner);
    }
    const jobId = newJobId();
    // The job and its NOTIFY (a wake-up only, heard if this commits) in this transaction.
    await enqueueOutboxJob(
      tx,
      {
        tenantId: ctx.tenantId,
        id: jobId,
        kind: 'charge_payment',
        paymentId,
        downstreamKey,
        payload: {
          amount: cart.amount,
          currency: cart.currency,
          ...(input.paymentMethod ? { paymentMethod: input.paymentMethod } : {}),
        },
      },
      { notify: ctx.notifyOutbox !== false },
    );
    const result = payResultOf(payment);
    await ctx.idempotency.complete(tx, result, 'created');
    // The attempt and the commit, in this transaction: they exist if and only if the payment does.
    await recordPaymentEvents(
      tx,
      createdPaymentEvents(
        { tenantId: ctx.tenantId, paymentId, key, transport },
        { job: jobId, downstreamKey, amount: cart.amount, currency: cart.currency },
      ),
    );
    return result;
  });
}
