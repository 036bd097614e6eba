import type { PaymentActionKind } from '@once/db/schema';
import { keyDigest } from './request-key.ts';

/** The downstream key's prefix per kind: what a processor-side reader can tell apart. */
const DOWNSTREAM_PREFIX: Record<PaymentActionKind, string> = {
  capture: 'once_cp_',
  void: 'once_vd_',
};

/**
 * A capture's or void's id: `act_` and 32 hex digits derived from (tenant, the caller's
 * Idempotency-Key), whatever the transport, so the action requested again after its row was
 * lost, or on another transport, is the same action (see `refundIdFor`).
 */
export function paymentActionIdFor(kind: PaymentActionKind, tenantId: string, key: string): string {
  return `act_${keyDigest([`${kind}_id`, tenantId, key]).slice(0, 32)}`;
}

/**
 * The downstream Idempotency-Key of a capture or void: derived from (tenant, the caller's
 * key), never from the payment's charge key, so every attempt of its job
 * and the action requested again after its row was lost send the same, and a second action
 * (another key) could never replay the first one's answer. Actions keep the key recorded on
 * their row and job, so keys issued before are unchanged.
 */
export function actionDownstreamKeyFor(
  kind: PaymentActionKind,
  tenantId: string,
  key: string,
): string {
  return `${DOWNSTREAM_PREFIX[kind]}${keyDigest([kind, tenantId, key])}`;
}
