import { payments } from '@once/db/schema';
import { IdempotencyError } from '@once/idempotency';
import { errorCodes } from '@once/postgres';
import { and, eq } from 'drizzle-orm';
import type { Queryable } from '../database.ts';
import type { PayResult } from './pay.types.ts';

type PaymentRow = typeof payments.$inferSelect;

/** Postgres `lock_not_available`: a wait went past the connection's `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';
/** Retry-After for a retry that waited past `lock_timeout` on a concurrent first attempt. */
const LOCK_WAIT_RETRY_AFTER_SECONDS = 1;

/**
 * The payment a (tenant, checkout idempotency key) already made, if any. At most one exists:
 * `payments_idempotency_key_unique`.
 */
export async function findPaymentByIdempotencyKey(
  db: Queryable,
  tenantId: string,
  idempotencyKey: string,
): Promise<PaymentRow | undefined> {
  const [row] = await db
    .select()
    .from(payments)
    .where(and(eq(payments.tenantId, tenantId), eq(payments.idempotencyKey, idempotencyKey)))
    .limit(1);
  return row;
}

/**
 * What a request with an already used key gets: the same input (equal fingerprint) gets the
 * payment as it is now (it may have settled since); another input, or a payment written before
 * fingerprints were stored (nothing to compare with, so nothing proves it is the same cart),
 * is refused with `idempotency_key_reused` (REST 422, tRPC UNPROCESSABLE_CONTENT).
 */
export function answerForExistingPayment(row: PaymentRow, fingerprint: string): PayResult {
  if (row.requestFingerprint !== fingerprint) throw new IdempotencyError('idempotency_key_reused');
  return payResultOf(row);
}

/** A payment as `pay` answers it, first time or again. */
export function payResultOf(row: PaymentRow): PayResult {
  return {
    paymentId: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    lines: row.lines,
    customerEmail: row.customerEmail,
    createdAt: row.createdAt.toISOString(),
  };
}

/**
 * Runs an insert that may wait on a concurrent transaction holding the same unique key; a wait
 * past `lock_timeout` becomes `idempotency_key_in_use` (409 + Retry-After: come back), never a
 * 500: that transaction is still deciding and a retry will see its outcome.
 */
export async function inUseIfLockWaitTimesOut<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!errorCodes(error).includes(LOCK_NOT_AVAILABLE)) throw error;
    throw new IdempotencyError('idempotency_key_in_use', {
      retryAfterSeconds: LOCK_WAIT_RETRY_AFTER_SECONDS,
      cause: error,
    });
  }
}
