import { isLiveJob } from '@once/db/outbox';
import type { PaymentStatus } from '@once/db/schema';
import { runStatement, type SqlRunner, sqlLiteralList } from '@once/postgres/sql';
import { type SQL, sql } from 'drizzle-orm';
import { statusesMovableTo } from './payment-states.ts';

/** Where a payment can be moved, with what the processor said about it. */
export type PaymentSettlement =
  | { status: 'succeeded'; processorPaymentIntentId: string }
  | { status: 'declined'; processorPaymentIntentId?: string; code: string; message?: string }
  | { status: 'unknown'; code: string; message?: string }
  | { status: 'failed'; code: string; message?: string; processorPaymentIntentId?: string }
  /** Back in flight: the reconciler re-enqueued the charge. */
  | { status: 'processing' }
  /** A manual-capture confirm authorised it (`requires_capture`). */
  | { status: 'authorized'; processorPaymentIntentId: string }
  /** The processor captured `amountCaptured` of the authorisation (the rest is released). */
  | { status: 'captured'; amountCaptured: number }
  /** The processor canceled the authorisation: an operator's void, or its expiry. */
  | { status: 'voided'; code?: string; message?: string }
  /** The confirm asked for 3-D Secure: the shopper answers the challenge at `nextActionUrl`. */
  | { status: 'requires_action'; processorPaymentIntentId: string; nextActionUrl: string | null }
  /** The challenge was abandoned and its intent canceled before any charge. */
  | { status: 'canceled'; processorPaymentIntentId: string; code: string; message?: string };

/** A payment, by its key. */
export interface PaymentRef {
  tenantId: string;
  paymentId: string;
}

export interface SettleOptions {
  /**
   * Settle only while no intent is recorded on the payment and none of its jobs is pending
   * or running: then no confirm was ever sent (only recorded intents are confirmed), which
   * is the proof a `failed` without a processor call needs. Checked in the same statement.
   */
  onlyIfNeverSent?: boolean;
}

/** The statuses a guarded update may move from, as SQL literals (a partial index needs literals). */
function movableFrom(to: PaymentStatus): SQL {
  return sqlLiteralList(statusesMovableTo(to));
}

/**
 * Moves a payment to `settlement.status` if, and only if, the move is allowed: a charge's
 * answer only over `processing` or `unknown`, a capture's or void's only over `authorized`
 * (`paymentTransitions`). A succeeded, declined or failed payment never
 * moves again, whoever asks and however late: a stale worker, a late webhook or a reconciler
 * racing a worker cannot overwrite the processor's definite answer. One guarded statement, so
 * concurrent settlers need no lock: the first wins, the others change nothing. Returns
 * whether the row changed. Run it in the transaction that must commit with it (the job's
 * end, the webhook's stored answer, the reconciler's decision).
 */
export async function settlePayment(
  db: SqlRunner,
  payment: PaymentRef,
  settlement: PaymentSettlement,
  options: SettleOptions = {},
): Promise<boolean> {
  const intentId =
    'processorPaymentIntentId' in settlement ? (settlement.processorPaymentIntentId ?? null) : null;
  const code = 'code' in settlement ? settlement.code : null;
  const message = 'message' in settlement ? (settlement.message ?? null) : null;
  const amountCaptured = 'amountCaptured' in settlement ? settlement.amountCaptured : null;
  // Kept only while the payment waits for the challenge: every other state clears it.
  const nextActionUrl = 'nextActionUrl' in settlement ? settlement.nextActionUrl : null;
  const neverSent = options.onlyIfNeverSent
    ? sql`
      and payment.processor_payment_intent_id is null
      and not exists (
        select 1 from outbox_jobs as job
        where job.tenant_id = payment.tenant_id and job.payment_id = payment.id
          and ${isLiveJob('job')})`
    : sql``;
  const rows = await runStatement<{ id: string }>(
    db,
    sql`
    update payments as payment
    set status = ${settlement.status},
        processor_payment_intent_id = coalesce(${intentId}, payment.processor_payment_intent_id),
        failure_code = ${code},
        failure_message = ${message},
        amount_captured = coalesce(${amountCaptured}::int, payment.amount_captured),
        next_action_url = ${nextActionUrl},
        updated_at = now()
    where payment.tenant_id = ${payment.tenantId} and payment.id = ${payment.paymentId}
      and payment.status in ${movableFrom(settlement.status)}${neverSent}
    returning payment.id`,
  );
  return rows.length === 1;
}
