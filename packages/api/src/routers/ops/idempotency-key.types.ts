import {
  isKeyOperatorError,
  type KeyAuditEntry,
  type KeySummary,
} from '@once/idempotency/drizzle/operator';
import { z } from 'zod';
import { ApiError } from '../../errors/api-error.ts';
import type { IsoTimes } from './iso-times.ts';
import { opsListInput } from './list.types.ts';

/**
 * Every state of the library's key rows, tombstones (`expired`) too: a record, so a state the
 * library adds does not compile here until the cockpit can filter by it.
 */
const KEY_STATES: Record<KeySummary['state'], true> = {
  in_progress: true,
  completed: true,
  released: true,
  unknown: true,
  expired: true,
};

/** The cockpit's key list: newest first, at most `limit`, only keys in `state` if given. */
export const idempotencyKeysInput = opsListInput
  .unwrap()
  .extend({
    state: z
      .enum(Object.keys(KEY_STATES) as [KeySummary['state'], ...KeySummary['state'][]])
      .optional(),
  })
  .default({ limit: 50 });
export type IdempotencyKeysInput = z.infer<typeof idempotencyKeysInput>;

/** One key of the caller's tenant (the tenant never comes from the input). */
export const idempotencyKeyInput = z.object({
  operation: z.string().min(1).max(200),
  key: z.string().min(1).max(255),
});
export type IdempotencyKeyInput = z.infer<typeof idempotencyKeyInput>;

/** Release or evict: the key, the revision the operator saw, and why. */
export const idempotencyKeyActionInput = idempotencyKeyInput.extend({
  revision: z.string().min(1).max(64),
  reason: z.string().trim().min(3).max(500),
});
export type IdempotencyKeyActionInput = z.infer<typeof idempotencyKeyActionInput>;

/** A key as the cockpit shows it: times as ISO strings, never the stored response body. */
export type OpsKeySummary = IsoTimes<KeySummary>;

/** What an action did, as its audit row records it. */
export type OpsKeyAuditEntry = IsoTimes<KeyAuditEntry>;

/** The operator library's refusals as the API's own codes (one catalogue for every transport). */
export function keyOperatorRefusalToApiError(error: unknown): unknown {
  if (!isKeyOperatorError(error)) return error;
  switch (error.code) {
    case 'key_not_found':
      return new ApiError('idempotency_key_not_found', error.message);
    case 'key_changed':
      return new ApiError('idempotency_key_changed', error.message);
    case 'key_not_releasable':
      return new ApiError('idempotency_key_not_releasable', error.message);
    case 'key_not_evictable':
      return new ApiError('idempotency_key_not_evictable', error.message);
    case 'invalid_input':
      return new ApiError('invalid_input', error.message);
  }
}
