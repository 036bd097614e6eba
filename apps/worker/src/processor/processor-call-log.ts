import type { ClaimedJob } from '@once/db/outbox';
import {
  type PaymentEventInput,
  type PaymentEventKind,
  workerActor,
} from '@once/db/payment-events';
import { outcomeOfChargeError } from './charge-outcome.ts';

/**
 * One call to the processor as the worker saw it: `charged`/`ok` (answered now), `replayed`
 * (the processor answered from its idempotency store: `Idempotent-Replayed: true`),
 * `in_flight` (409 `idempotency_key_in_use`), `declined`, `failed` (ambiguous: reset,
 * timeout, 5xx), `rejected` (another 4xx).
 */
export interface ProcessorCall {
  call:
    | 'create'
    | 'retrieve'
    | 'search'
    | 'confirm'
    | 'cancel'
    | 'capture'
    | 'refund'
    | 'retrieve_refund'
    | 'list_refunds';
  /** The downstream Idempotency-Key sent, if the call carries one. */
  key?: string;
  result: 'ok' | 'replayed' | 'in_flight' | 'declined' | 'failed' | 'rejected';
  /** The PaymentIntent's status in the answer. */
  status?: string;
  intent?: string;
  error?: string;
}

/**
 * Runs one processor call and appends what it answered to `calls`; rethrows its error. The
 * calls are recorded as `processor.call` events in the transaction that records what the
 * worker made of them (the intent, the outcome), never on their own.
 */
export async function observedCall<T>(
  calls: ProcessorCall[],
  what: Pick<ProcessorCall, 'call' | 'key' | 'intent'>,
  run: () => Promise<T>,
): Promise<T> {
  try {
    const answer = await run();
    const intent = answer as { id?: unknown; status?: unknown; lastResponse?: unknown } | null;
    const headers = (intent?.lastResponse as { headers?: Record<string, string> } | undefined)
      ?.headers;
    calls.push({
      ...what,
      result: headers?.['idempotent-replayed'] === 'true' ? 'replayed' : 'ok',
      ...(typeof intent?.status === 'string' ? { status: intent.status } : {}),
      ...(typeof intent?.id === 'string' ? { intent: intent.id } : {}),
    });
    return answer;
  } catch (error) {
    const outcome = outcomeOfChargeError(error);
    const { kind } = outcome;
    const result =
      kind === 'in_flight' || kind === 'declined' || kind === 'rejected' ? kind : 'failed';
    const why = 'reason' in outcome ? outcome.reason : 'code' in outcome ? outcome.code : '';
    calls.push({ ...what, result, error: why });
    throw error;
  }
}

/** One of a job's facts on its payment's timeline, in the lane of the worker holding it. */
export function jobEvent(
  job: ClaimedJob,
  kind: PaymentEventKind,
  detail: Record<string, unknown>,
): PaymentEventInput {
  return {
    tenantId: job.tenantId,
    paymentId: job.paymentId,
    actor: workerActor(job.lockedBy),
    kind,
    detail: { job: job.id, attempt: job.attempts, ...detail },
  };
}

/** Takes the calls observed so far (emptying the list) as `processor.call` events: arrows to the processor. */
export function takeCallEvents(job: ClaimedJob, calls: ProcessorCall[]): PaymentEventInput[] {
  return calls
    .splice(0)
    .map((call) => jobEvent(job, 'processor.call', { to: 'processor', ...call }));
}
