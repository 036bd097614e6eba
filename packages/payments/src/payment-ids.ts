import { randomUUID } from 'node:crypto';
import { keyDigest } from './request-key.ts';

/** `<prefix>_` and 32 lowercase hex digits (a UUID v4 without its dashes). */
function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/** A new payment id: `pay_` and 32 hex digits. */
export function newPaymentId(): string {
  return newId('pay');
}

/**
 * A new outbox job id: `job_` and 32 hex digits, the same for the job `checkout.pay` writes
 * and every job the reconciler enqueues again.
 */
export function newJobId(): string {
  return newId('job');
}

/**
 * The downstream Idempotency-Key the worker sends to the processor for a checkout: derived
 * from (tenant, the client's Idempotency-Key), not from the payment, so every attempt, every
 * re-enqueued job AND a payment re-created after its row was lost (a failover that dropped an
 * acknowledged commit, the client retrying) send the same key, and the processor replays the
 * first charge instead of making a second one. A hash (`keyDigest`): the processor never sees
 * the client's key, and two tenants' equal keys never meet. Payments keep the key recorded on
 * their row (`payments.downstream_key`, the job's `downstream_key`), so keys issued before are
 * unchanged.
 */
export function downstreamKeyFor(tenantId: string, checkoutKey: string): string {
  return `once_ck_${keyDigest([tenantId, checkoutKey])}`;
}

/**
 * The Idempotency-Key of the confirm of a payment's intent (step B of the two-step charge):
 * derived from the payment's downstream key, so every attempt of every job, and a payment
 * re-created for the same checkout, sends the same.
 */
export function confirmKeyFor(downstreamKey: string): string {
  return `${downstreamKey}:confirm`;
}

/**
 * The Idempotency-Key of the reconciler's cancel of a payment's intent: one per payment, so
 * a cancel re-sent after a lost answer is the same cancel.
 */
export function cancelKeyFor(downstreamKey: string): string {
  return `${downstreamKey}:cancel`;
}
