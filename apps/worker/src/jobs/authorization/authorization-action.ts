import { type ClaimedJob, finishJob } from '@once/db/outbox';
import type { PaymentActionKind } from '@once/db/schema';
import { settlePayment } from '@once/payments';
import type postgres from 'postgres';
import type Stripe from 'stripe';
import {
  isUnexpectedIntentState,
  type PaymentIntentState,
} from '../../processor/charge-outcome.ts';
import { observedCall, type ProcessorCall } from '../../processor/processor-call-log.ts';
import {
  type ActionDoubt,
  actionOutcomeOfError,
  endOnDoubt,
  type JobDeps,
  type JobResult,
  runProcessorActionJob,
  skipped,
} from '../processor-action-job.ts';

/** An operator's capture or void as its job reads it. */
interface AuthorizationAction {
  id: string;
  kind: PaymentActionKind;
  status: string;
  /** A capture's `amount_to_capture`; null: all that is capturable. */
  amount: number | null;
  payment_status: string;
  processor_payment_intent_id: string | null;
  processor_secret_key: string;
}

/** What the processor's intent proves about an authorisation, whoever asked for what. */
type AuthorizationEnd =
  /** Captured once: `succeeded`, `amount_received` the captured amount. */
  | { payment: 'captured'; amountCaptured: number }
  /** Canceled: voided by an operator, or its window expired. Nothing was captured. */
  | { payment: 'voided' };

/** The fields of a captured or canceled PaymentIntent the worker reads. */
interface AuthorizationIntentState extends PaymentIntentState {
  amount_received?: number;
}

/**
 * What one attempt at a capture or void tells us: `ended` (the intent was captured or
 * canceled, by this action or, read afterwards, by whatever else ended it), or no answer of
 * that kind (refused, in flight, ambiguous).
 */
type ActionOutcome = { kind: 'ended'; end: AuthorizationEnd } | ActionDoubt;

/**
 * Runs one claimed capture or void job on the template: an action already answered, or whose
 * payment is not `authorized`, ends without a call; a retry (or an action left `unknown`)
 * reads the intent first, since an earlier attempt whose answer was lost may have acted; else
 * the capture or cancel goes out under the action's own downstream key, the same on every
 * attempt. Whatever ended the intent settles the payment `captured` or `voided`, and the action
 * `succeeded` if that is what it asked for, else `failed`; a refusal leaves it `authorized`.
 */
export function runAuthorizationAction(
  job: ClaimedJob<'capture_payment' | 'void_payment'>,
  deps: JobDeps,
): Promise<JobResult> {
  const actionId = typeof job.payload.actionId === 'string' ? job.payload.actionId : null;
  return runProcessorActionJob<AuthorizationAction, ActionOutcome>(job, deps, {
    logName: 'action.attempted',
    load: () => (actionId ? loadAction(deps.sql, job, actionId) : Promise.resolve(null)),
    notFound: 'action_not_found',
    skip: (action) =>
      action.status !== 'pending' && action.status !== 'unknown'
        ? skipped('done', `action_${action.status}`)
        : action.payment_status !== 'authorized' || !action.processor_payment_intent_id
          ? skipped('done', `payment_${action.payment_status}`)
          : null,
    attempt: (processor, action, calls) => actOnce(processor, job, action, calls),
    describe: (action) => ({ action: action.id }),
    describeOutcome: (outcome) => ({
      kind: outcome.kind,
      ...(outcome.kind === 'ended'
        ? outcome.end
        : outcome.kind === 'refused'
          ? { code: outcome.code }
          : { reason: outcome.reason }),
    }),
    end: async (tx, action, outcome) => {
      if (outcome.kind !== 'ended') {
        return endOnDoubt(tx, job, outcome, (status, code, message) =>
          setActionStatus(tx, job, action, status, code, message),
        );
      }
      const { end } = outcome;
      const asked = action.kind === 'capture' ? 'captured' : 'voided';
      const lastError = end.payment === asked ? null : `found_${end.payment}`;
      if (!(await finishJob(tx, job, 'done', lastError))) return { job: 'lease_lost' };
      if (end.payment === asked) await setActionStatus(tx, job, action, 'succeeded');
      else await setActionStatus(tx, job, action, 'failed', `payment_already_${end.payment}`);
      await settlePayment(
        tx,
        { tenantId: job.tenantId, paymentId: job.paymentId },
        end.payment === 'captured'
          ? { status: 'captured', amountCaptured: end.amountCaptured }
          : { status: 'voided' },
      );
      return { job: 'done' };
    },
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
        return actionOutcomeOfError(readError);
      }
    }
    return actionOutcomeOfError(error);
  }
}

/**
 * Where an authorisation ended, or `null` while it still waits (`requires_capture`) or is in
 * a state the worker cannot read as an end.
 */
function authorizationEndOf(intent: AuthorizationIntentState): AuthorizationEnd | null {
  if (intent.status === 'succeeded') {
    return { payment: 'captured', amountCaptured: intent.amount_received ?? 0 };
  }
  if (intent.status === 'canceled') return { payment: 'voided' };
  return null;
}

/** Moves a still unanswered action to its status; an answered one never moves again. */
async function setActionStatus(
  tx: postgres.TransactionSql,
  job: ClaimedJob,
  action: AuthorizationAction,
  status: 'succeeded' | 'failed' | 'unknown',
  code: string | null = null,
  message: string | null = null,
): Promise<void> {
  await tx`
    update payment_actions
    set status = ${status}, failure_code = ${code}, failure_message = ${message ?? null},
        updated_at = now()
    where tenant_id = ${job.tenantId} and id = ${action.id} and status in ('pending', 'unknown')`;
}
