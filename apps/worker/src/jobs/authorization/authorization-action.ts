import type { ClaimedJob } from '@once/db/outbox';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import { isUnexpectedIntentState, outcomeOfChargeError } from '../../processor/charge-outcome.ts';
import { observedCall, type ProcessorCall } from '../../processor/processor-call-log.ts';
import type { ChargePaymentDeps } from '../charge/charge-payment.ts';
import { type ActionJobResult, runProcessorActionJob } from '../processor-action-job.ts';
import {
  type AuthorizationEnd,
  type AuthorizationIntentState,
  authorizationEndOf,
} from './authorization-outcome.ts';
import {
  type ActionOutcome,
  type AuthorizationAction,
  recordActionOutcome,
} from './record-action-outcome.ts';

/**
 * Runs one claimed capture or void job, top to bottom like the protocol:
 * 1. read the action, its payment's recorded intent and the tenant's processor key; an action
 *    already answered, or one whose payment is not `authorized`, ends the job without a call;
 * 2. on a retry (or for an action left `unknown`, re-enqueued by the reconciler), READ the
 *    intent first (by id, strongly consistent): an earlier attempt whose
 *    answer was lost may already have captured or voided it, and that is the outcome;
 * 3. otherwise send the capture or the cancel with the action's own downstream key (every
 *    attempt the same, so the processor replays a lost answer instead of acting twice); an
 *    intent that is no longer capturable (`payment_intent_unexpected_state`) is read again;
 * 4. record the outcome and finish the job in one transaction guarded by the lock token.
 *
 * @example
 * await runAuthorizationAction(job, deps);
 */
export function runAuthorizationAction(
  job: ClaimedJob<'capture_payment' | 'void_payment'>,
  deps: ChargePaymentDeps,
): Promise<ActionJobResult> {
  const actionId = typeof job.payload.actionId === 'string' ? job.payload.actionId : null;
  return runProcessorActionJob<AuthorizationAction, ActionOutcome>(job, deps, {
    logName: 'action.attempted',
    load: (claimed) => (actionId ? loadAction(deps.sql, claimed, actionId) : Promise.resolve(null)),
    skipReason: (action) =>
      !action
        ? 'action_not_found'
        : action.status !== 'pending' && action.status !== 'unknown'
          ? `action_${action.status}`
          : action.payment_status !== 'authorized' || !action.processor_payment_intent_id
            ? `payment_${action.payment_status}`
            : null,
    endOfSkipped: (action) => (action ? 'done' : 'dead'),
    attempt: (processor, action, calls) => actOnce(processor, job, action, calls),
    record: (action, outcome, events) =>
      recordActionOutcome(deps.sql, job, action, outcome, deps.backoff, events),
    describe: (action) => ({ action: action.id }),
  });
}

async function loadAction(
  sql: postgres.Sql,
  job: ClaimedJob,
  actionId: string,
): Promise<AuthorizationAction | null> {
  const [row] = await sql<AuthorizationAction[]>`
    select action.id, action.kind, action.status, action.amount,
           payment.status as payment_status, payment.processor_payment_intent_id,
           tenant.processor_secret_key
    from payment_actions as action
    join payments as payment
      on payment.tenant_id = action.tenant_id and payment.id = action.payment_id
    join tenants as tenant on tenant.id = action.tenant_id
    where action.tenant_id = ${job.tenantId} and action.id = ${actionId}
      and action.payment_id = ${job.paymentId}`;
  return row ?? null;
}

async function actOnce(
  processor: Stripe,
  job: ClaimedJob,
  action: AuthorizationAction,
  calls: ProcessorCall[],
): Promise<ActionOutcome> {
  const intentId = action.processor_payment_intent_id!;
  const read = async (): Promise<AuthorizationEnd | null> =>
    authorizationEndOf(
      (await observedCall(calls, { call: 'retrieve', intent: intentId }, () =>
        processor.paymentIntents.retrieve(intentId),
      )) as AuthorizationIntentState,
    );
  try {
    // A retry, or a job re-enqueued for an action left unknown: an earlier attempt may have
    // acted, and the intent says so whatever the processor still remembers of its key.
    if (job.attempts > 1 || action.status === 'unknown') {
      const end = await read();
      if (end) return { kind: 'ended', end };
    }
    const key = job.downstreamKey;
    const answered = (await (action.kind === 'capture'
      ? observedCall(calls, { call: 'capture', key, intent: intentId }, () =>
          processor.paymentIntents.capture(
            intentId,
            action.amount ? { amount_to_capture: action.amount } : {},
            { idempotencyKey: key },
          ),
        )
      : observedCall(calls, { call: 'cancel', key, intent: intentId }, () =>
          processor.paymentIntents.cancel(intentId, {}, { idempotencyKey: key }),
        ))) as AuthorizationIntentState;
    const end = authorizationEndOf(answered);
    return end
      ? { kind: 'ended', end }
      : { kind: 'ambiguous', reason: `payment_intent_${answered.status}` };
  } catch (error) {
    if (isUnexpectedIntentState(error)) {
      // Captured, canceled or expired meanwhile: the intent says which.
      try {
        const end = await read();
        if (end) return { kind: 'ended', end };
      } catch (readError) {
        return fromError(readError);
      }
    }
    return fromError(error);
  }
}

function fromError(error: unknown): ActionOutcome {
  const outcome = outcomeOfChargeError(error);
  switch (outcome.kind) {
    case 'in_flight':
    case 'ambiguous':
      return outcome;
    case 'rejected':
      return { kind: 'refused', code: outcome.code, message: outcome.message };
    default:
      return { kind: 'refused', code: 'unexpected_answer', message: outcome.kind };
  }
}
