import { and, eq, isNotNull, lte, sql } from 'drizzle-orm';
import type { ProcessorDatabase } from '../db/client.ts';
import { refunds } from '../db/schema/index.ts';
import { renderRefund } from '../payments/render-objects.ts';
import { bookRefund } from '../refunds/create-refund.ts';
import { enqueueEvent } from '../webhooks/enqueue-event.ts';
import { type PeriodicSweep, startPeriodicSweep } from './periodic-sweep.ts';

const BATCH = 100;

/**
 * Moves the asynchronous refunds that are due to their final status, as Stripe's test cards
 * do "some time later": a `pending` one becomes `succeeded` (`refund.updated`); a
 * `succeeded` one becomes `failed` (`refund.failed`): the money comes back, so the charge's
 * `amount_refunded` drops by it and the ledger books the return as a `refund` row of the
 * negative amount (the refunds of a charge always sum to what left it).
 */
async function settleRefunds(db: ProcessorDatabase): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(refunds)
      .where(and(isNotNull(refunds.settlesAt), lte(refunds.settlesAt, sql`now()`)))
      .limit(BATCH)
      .for('update', { skipLocked: true });
    for (const refund of due) {
      const failed = refund.settlesTo === 'failed';
      const [settled] = await tx
        .update(refunds)
        .set({
          status: failed ? 'failed' : 'succeeded',
          failureReason: failed ? 'unknown' : null,
          settlesAt: null,
          settlesTo: null,
        })
        .where(eq(refunds.id, refund.id))
        .returning();
      if (failed) await bookRefund(tx, refund, -refund.amount, null);
      await enqueueEvent(tx, {
        accountId: refund.accountId,
        type: failed ? 'refund.failed' : 'refund.updated',
        object: renderRefund(settled!),
        idempotencyKey: null,
      });
    }
    return due.length;
  });
}

/**
 * Runs {@link settleRefunds} every `intervalMs` (a quarter of the settle delay, between 100 ms
 * and 10 s).
 */
export function startRefundSettlement(
  db: ProcessorDatabase,
  log: (line: string) => void,
  settleMs: number,
): PeriodicSweep {
  return startPeriodicSweep({
    name: 'refunds',
    intervalMs: Math.min(10_000, Math.max(100, Math.floor(settleMs / 4))),
    log,
    pass: () => settleRefunds(db),
    describe: (settled) => (settled > 0 ? `${settled} settled` : undefined),
  });
}
