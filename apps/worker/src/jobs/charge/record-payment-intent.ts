import { type ClaimedJob, lockHeldJob } from '@once/db/outbox';
import { type PaymentEventInput, recordPaymentEvents, workerActor } from '@once/db/payment-events';
import type postgres from 'postgres';

/**
 * Step A's recovery point: writes the PaymentIntent's id on the payment, in a transaction
 * that first locks the job row and checks this worker still holds it (`lock_token`).
 * Only a recorded intent is ever confirmed, so every confirm that may ever have left is
 * on an intent the app knows by id, and retrieving it by id is a complete answer.
 *
 * Never replaces a different recorded id: returns `false` then (and when the lease was
 * lost), and the caller confirms nothing. Writing the same id again is a no-op success,
 * so a retried commit whose answer was lost is harmless.
 */
export async function recordPaymentIntentId(
  sql: postgres.Sql,
  job: ClaimedJob,
  intentId: string,
  /** The processor calls that led here (`processor.call`), recorded with the intent. */
  callEvents: readonly PaymentEventInput[] = [],
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await lockHeldJob(tx, job))) return false;
    const rows = await tx`
      update payments
      set processor_payment_intent_id = ${intentId}, updated_at = now()
      where tenant_id = ${job.tenantId} and id = ${job.paymentId}
        and (processor_payment_intent_id is null or processor_payment_intent_id = ${intentId})
      returning id`;
    if (rows.length !== 1) return false;
    await recordPaymentEvents(tx, [
      ...callEvents,
      {
        tenantId: job.tenantId,
        paymentId: job.paymentId,
        actor: workerActor(job.lockedBy),
        kind: 'intent.recorded',
        detail: { job: job.id, attempt: job.attempts, intent: intentId },
      },
    ]);
    return true;
  });
}
