import { randomUUID } from 'node:crypto';
import { schema } from '@once/db';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { Log } from './logger.ts';
import { settlePayment } from './settle-payment.ts';

export interface ReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /** Only payments unsettled for at least this long (and with no live job) are looked at. */
  olderThanMs: number;
  /** Re-enqueues of a charge the processor has no trace of before giving up with `failed`. */
  maxRequeues: number;
  batchSize?: number;
}

export interface ReconcileSummary {
  examined: number;
  succeeded: number;
  declined: number;
  requeued: number;
  failed: number;
  /** Still undecided (the processor has a non-final PaymentIntent, or the lookup failed). */
  left: number;
}

interface Candidate {
  tenant_id: string;
  id: string;
  status: 'processing' | 'unknown';
  downstream_key: string;
  processor_payment_intent_id: string | null;
  processor_secret_key: string;
  jobs: number;
}

/** What the processor knows about one payment. */
type LedgerAnswer =
  | { found: 'succeeded'; intentId: string }
  | { found: 'declined'; intentId: string; code: string; message?: string }
  | { found: 'in_flight' }
  | { found: 'nothing' };

/**
 * One pass of the reconciler. For each payment stuck in `unknown` (retries exhausted on
 * ambiguous failures) or `processing` (no live job left) it asks the processor, the
 * source of truth, and settles from its answer:
 * - a succeeded PaymentIntent -> `succeeded`; a declined/canceled one -> `declined`;
 * - nothing at all -> the charge never happened: enqueue it again with the SAME downstream
 *   key (if a lost request did charge after all, the processor replays it instead of
 *   charging twice), at most `maxRequeues` times, then `failed`.
 * Every settle is guarded (terminal states never move) and a re-enqueue re-checks, under a
 * row lock, that nobody enqueued or settled in between, so several workers can reconcile
 * at once.
 *
 * @example
 * const summary = await reconcilePayments({ sql, processorFor, log, olderThanMs: 60_000, maxRequeues: 3 });
 */
export async function reconcilePayments(options: ReconcileOptions): Promise<ReconcileSummary> {
  const { sql, log } = options;
  const summary: ReconcileSummary = {
    examined: 0,
    succeeded: 0,
    declined: 0,
    requeued: 0,
    failed: 0,
    left: 0,
  };
  const candidates = await sql<Candidate[]>`
    select payment.tenant_id, payment.id, payment.status, payment.downstream_key,
           payment.processor_payment_intent_id, tenant.processor_secret_key,
           (select count(*)::int from outbox_jobs as job
             where job.tenant_id = payment.tenant_id and job.payment_id = payment.id) as jobs
    from payments as payment
    join tenants as tenant on tenant.id = payment.tenant_id
    where payment.status in ('processing', 'unknown')
      and payment.updated_at < now() - ${options.olderThanMs} * interval '1 millisecond'
      and not exists (
        select 1 from outbox_jobs as job
        where job.tenant_id = payment.tenant_id and job.payment_id = payment.id
          and job.status in ('pending', 'running'))
    order by payment.updated_at
    limit ${options.batchSize ?? 100}`;

  for (const payment of candidates) {
    summary.examined++;
    const ref = { tenantId: payment.tenant_id, paymentId: payment.id };
    let answer: LedgerAnswer;
    try {
      answer = await askProcessor(options.processorFor(payment.processor_secret_key), payment);
    } catch (error) {
      log('reconcile.lookup_failed', { payment: payment.id, error: String(error) });
      summary.left++;
      continue;
    }

    if (answer.found === 'succeeded') {
      await settlePayment(sql, ref, {
        status: 'succeeded',
        processorPaymentIntentId: answer.intentId,
      });
      summary.succeeded++;
    } else if (answer.found === 'declined') {
      await settlePayment(sql, ref, {
        status: 'declined',
        processorPaymentIntentId: answer.intentId,
        code: answer.code,
        message: answer.message,
      });
      summary.declined++;
    } else if (answer.found === 'in_flight') {
      summary.left++;
      continue;
    } else if (payment.jobs - 1 < options.maxRequeues) {
      if (await requeueCharge(sql, payment)) summary.requeued++;
      else summary.left++;
    } else {
      await settlePayment(sql, ref, {
        status: 'failed',
        code: 'not_charged',
        message: `the processor holds no charge after ${payment.jobs} enqueued attempts`,
      });
      summary.failed++;
    }
    log('reconcile.settled', { payment: payment.id, was: payment.status, found: answer.found });
  }
  return summary;
}

async function askProcessor(processor: Stripe, payment: Candidate): Promise<LedgerAnswer> {
  const intents: Stripe.PaymentIntent[] = [];
  if (payment.processor_payment_intent_id) {
    intents.push(await processor.paymentIntents.retrieve(payment.processor_payment_intent_id));
  } else {
    const result = await processor.paymentIntents.search({
      query: `metadata['payment_id']:'${escapeSearchValue(payment.id)}'`,
      limit: 100,
    });
    // Metadata is the tenant's to set; make sure the intent is really this tenant's payment.
    intents.push(
      ...result.data.filter((intent) => intent.metadata?.tenant_id === payment.tenant_id),
    );
  }
  const succeeded = intents.find((intent) => intent.status === 'succeeded');
  if (succeeded) return { found: 'succeeded', intentId: succeeded.id };
  const declined = intents.find(
    (intent) => intent.status === 'requires_payment_method' || intent.status === 'canceled',
  );
  if (declined) {
    const error = declined.last_payment_error;
    return {
      found: 'declined',
      intentId: declined.id,
      code: error?.decline_code ?? error?.code ?? 'card_declined',
      message: error?.message,
    };
  }
  return intents.length > 0 ? { found: 'in_flight' } : { found: 'nothing' };
}

/**
 * Enqueues the charge again, with the payment's own downstream key, and puts the payment
 * back to `processing`, in one transaction that first re-checks (with the payment row
 * locked) that it is still unsettled and still has no live job.
 */
async function requeueCharge(sql: postgres.Sql, payment: Candidate): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [current] = await tx<{ status: string; jobs: number; live: number; payload: unknown }[]>`
      select payment.status,
             (select count(*)::int from outbox_jobs as job
               where job.tenant_id = payment.tenant_id and job.payment_id = payment.id) as jobs,
             (select count(*)::int from outbox_jobs as job
               where job.tenant_id = payment.tenant_id and job.payment_id = payment.id
                 and job.status in ('pending', 'running')) as live,
             (select job.payload from outbox_jobs as job
               where job.tenant_id = payment.tenant_id and job.payment_id = payment.id
               order by job.created_at desc limit 1) as payload
      from payments as payment
      where payment.tenant_id = ${payment.tenant_id} and payment.id = ${payment.id}
      for update of payment`;
    if (!current || current.live > 0 || current.jobs !== payment.jobs) return false;
    if (current.status !== 'processing' && current.status !== 'unknown') return false;
    const payload = (current.payload ?? {}) as Record<string, unknown>;
    await tx`
      insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload)
      values (${payment.tenant_id}, ${`job_${randomUUID()}`}, 'charge_payment', ${payment.id},
              ${payment.downstream_key}, ${JSON.stringify(payload)}::text::jsonb)`;
    await settlePayment(
      tx,
      { tenantId: payment.tenant_id, paymentId: payment.id },
      { status: 'processing' },
    );
    await tx`select pg_notify(${schema.OUTBOX_NOTIFY_CHANNEL}, ${payment.id})`;
    return true;
  });
}

/** Stripe's search language quotes values with single quotes and escapes with a backslash. */
function escapeSearchValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
}
