import { type BackoffPolicy, equalJitterDelayMs } from '@once/backoff';
import { authorizationExpired, settlePayment } from '@once/payments';
import { msInterval, runStatement } from '@once/postgres/sql';
import { sql as drizzleSql } from 'drizzle-orm';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import type { Log } from '../runtime/logger.ts';
import { decided } from './reconciler-decision.ts';

export interface AuthorizationReconcileOptions {
  sql: postgres.Sql;
  processorFor: (secretKey: string) => Stripe;
  log: Log;
  /** Only authorisations at least this old (since the payment was authorised) are looked at. */
  olderThanMs: number;
  /** Next look at an authorisation still held: backoff by its number of looks. */
  recheckBackoff: BackoffPolicy;
  /** Payments looked at per pass. */
  batchSize?: number;
}

export interface AuthorizationReconcileSummary {
  examined: number;
  /** Ended by the processor (expired uncaptured): settled `voided`, `authorization_expired`. */
  ended: number;
  /** Still held (or the processor could not be asked): looked at again later. */
  left: number;
}

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
  options: AuthorizationReconcileOptions,
): Promise<AuthorizationReconcileSummary> {
  const { sql, log } = options;
  const summary: AuthorizationReconcileSummary = { examined: 0, ended: 0, left: 0 };
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
    let intent: Stripe.PaymentIntent | undefined;
    try {
      intent = await options
        .processorFor(payment.processor_secret_key)
        .paymentIntents.retrieve(payment.processor_payment_intent_id);
    } catch (error) {
      log('reconcile.authorization_lookup_failed', {
        tenant: payment.tenant_id,
        payment: payment.id,
        error: String(error),
      });
    }
    if (intent?.status === 'canceled' && intent.cancellation_reason === 'automatic') {
      if (await settleEnded(sql, payment, intent.id)) {
        summary.ended++;
        log('reconcile.authorization_expired', { payment: payment.id, intent: intent.id });
      }
      continue;
    }
    await lookAgainLater(sql, payment, options.recheckBackoff);
    summary.left++;
  }
  return summary;
}

/** `voided` (authorization_expired), with the reconciler's timeline event, in one transaction. */
function settleEnded(
  sql: postgres.Sql,
  payment: HeldAuthorization,
  intentId: string,
): Promise<boolean> {
  const detail = { found: 'authorization_expired', decision: 'voided', intent: intentId };
  return decided(sql, payment, detail, (tx) =>
    settlePayment(
      tx,
      { tenantId: payment.tenant_id, paymentId: payment.id },
      authorizationExpired(intentId),
    ),
  );
}

async function lookAgainLater(
  sql: postgres.Sql,
  payment: HeldAuthorization,
  backoff: BackoffPolicy,
): Promise<void> {
  const delayMs = equalJitterDelayMs(payment.reconcile_checks + 1, backoff);
  await runStatement(
    sql,
    drizzleSql`
    update payments
    set reconcile_after = now() + ${msInterval(delayMs)},
        reconcile_checks = reconcile_checks + 1
    where tenant_id = ${payment.tenant_id} and id = ${payment.id} and status = 'authorized'`,
  );
}
