import { and, eq, lte, sql } from 'drizzle-orm';
import type { ProcessorDatabase } from '../db/client.ts';
import { paymentIntents } from '../db/schema/index.ts';
import { voidPaymentIntent } from '../payments/void-payment-intent.ts';
import { type PeriodicSweep, startPeriodicSweep } from './periodic-sweep.ts';

const BATCH = 100;

/**
 * Cancels every authorisation past its window (`capture_before`, set at confirm from
 * `PROCESSOR_AUTHORIZATION_WINDOW_MS` by the database clock), as Stripe cancels an uncaptured
 * PaymentIntent: `canceled`, `cancellation_reason: automatic`, the hold released,
 * `payment_intent.canceled` sent. Rows a capture or cancel holds are skipped and seen on the
 * next pass; a capture that gets the lock first after the window refuses by itself.
 */
async function expireAuthorizations(db: ProcessorDatabase): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx
      .select()
      .from(paymentIntents)
      .where(
        and(
          eq(paymentIntents.status, 'requires_capture'),
          lte(paymentIntents.captureBefore, sql`now()`),
        ),
      )
      .limit(BATCH)
      .for('update', { skipLocked: true });
    for (const intent of due) {
      await voidPaymentIntent(tx, intent, { reason: 'automatic', idempotencyKey: null });
    }
    return due.length;
  });
}

/**
 * Runs {@link expireAuthorizations} every `intervalMs` (a quarter of the window, between
 * 100 ms and a minute: an expired authorisation shows as `requires_capture` at most that long).
 */
export function startAuthorizationExpiry(
  db: ProcessorDatabase,
  log: (line: string) => void,
  windowMs: number,
): PeriodicSweep {
  return startPeriodicSweep({
    name: 'authorizations',
    intervalMs: Math.min(60_000, Math.max(100, Math.floor(windowMs / 4))),
    log,
    pass: () => expireAuthorizations(db),
    describe: (expired) => (expired > 0 ? `${expired} expired (canceled)` : undefined),
  });
}
