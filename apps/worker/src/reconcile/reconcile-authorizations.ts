import type { BackoffPolicy } from '@once/backoff';
import { authorizationExpired } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import {
  checkAgainLater,
  type ReconcileOptions,
  type ReconcileSummary,
  settleDecided,
} from './reconciler-decision.ts';

/** The processor ends an uncaptured authorisation by itself, and that webhook may be lost. */
const RECHECK_BACKOFF: BackoffPolicy = { baseMs: 60_000, maxMs: 60 * 60_000 };

interface HeldAuthorization {
  tenant_id: string;
  id: string;
  processor_payment_intent_id: string;
  processor_secret_key: string;
  reconcile_checks: number;
}

/**
 * The processor cancels an uncaptured authorisation when its window passes (Stripe: 7 days)
 * and that webhook may never arrive: each authorised payment with no capture or void under way
 * is asked about by id, and one ended is settled `voided` under the state machine's guard.
 */
export async function reconcileAuthorizations(
  options: ReconcileOptions,
  summary: ReconcileSummary,
): Promise<void> {
  const { sql, log } = options;
  const held = await runStatement<HeldAuthorization>(
    sql,
    drizzleSql`
    select payment.tenant_id, payment.id, payment.processor_payment_intent_id,
           payment.reconcile_checks, tenant.processor_secret_key
    from payments as payment
    join tenants as tenant on tenant.id = payment.tenant_id
    where payment.status = 'authorized'
      and payment.processor_payment_intent_id is not null
      and payment.updated_at <= now() - ${msInterval(options.olderThanMs)}
      and (payment.reconcile_after is null or payment.reconcile_after <= now())
      and not exists (
        select 1 from payment_actions as action
        where action.tenant_id = payment.tenant_id and action.payment_id = payment.id
          and action.status <> 'failed')
    order by coalesce(payment.reconcile_after, payment.updated_at)
    limit ${options.batchSize ?? 100}`,
  );
  for (const payment of held) {
    summary.examined++;
    const processor = options.processorFor(payment.processor_secret_key);
    const intent = await processor.paymentIntents
      .retrieve(payment.processor_payment_intent_id)
      .catch((error: unknown) => {
        const fields = { tenant: payment.tenant_id, payment: payment.id, error: String(error) };
        log('reconcile.authorization_lookup_failed', fields);
        return undefined;
      });
    if (intent?.status === 'canceled' && intent.cancellation_reason === 'automatic') {
      const detail = { found: 'authorization_expired', intent: intent.id };
      if (await settleDecided(sql, payment, detail, authorizationExpired(intent.id))) {
        summary.authorizationsEnded++;
        log('reconcile.authorization_expired', { payment: payment.id, intent: intent.id });
      }
      continue;
    }
    await checkAgainLater(sql, payment, drizzleSql`status = 'authorized'`, RECHECK_BACKOFF);
  }
}
