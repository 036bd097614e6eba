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
 * The downstream Idempotency-Key for a checkout, from (tenant, client key) and not the payment:
 * every attempt, re-enqueued job AND a payment re-created after a failover lost its row send
 * the same key, so the processor replays the first charge. Hashed, so the processor never sees
 * the client's key and two tenants' equal keys never meet. Rows keep the key they recorded.
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
