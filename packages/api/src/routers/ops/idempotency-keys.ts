import { idempotencyKeys } from '@once/db/schema';
import {
  isKeyOperatorError,
  type KeyOperator,
  type KeyOperatorErrorCode,
  type KeySummary,
} from '@once/idempotency/drizzle/operator';
import { and, desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Database } from '../../database.ts';
import { ApiError, type ApiErrorCode } from '../../errors/api-error.ts';
import { isoTimes } from './iso-times.ts';
import { opsListInput } from './lists.ts';

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

/** One key of the caller's tenant (the tenant never comes from the input). */
export const idempotencyKeyInput = z.object({
  operation: z.string().min(1).max(200),
  key: z.string().min(1).max(255),
});

/** Release or evict: the key, the revision the operator saw, and why. */
export const idempotencyKeyActionInput = idempotencyKeyInput.extend({
  revision: z.string().min(1).max(64),
  reason: z.string().trim().min(3).max(500),
});

/** The operator library's refusals as the API's own codes (one catalogue for every transport). */
const KEY_REFUSALS: Record<KeyOperatorErrorCode, ApiErrorCode> = {
  key_not_found: 'idempotency_key_not_found',
  key_changed: 'idempotency_key_changed',
  key_not_releasable: 'idempotency_key_not_releasable',
  key_not_evictable: 'idempotency_key_not_evictable',
  invalid_input: 'invalid_input',
};

/**
 * The tenant's latest idempotency keys and their states (in_progress, completed, released,
 * unknown, expired), all or those of `input.state`. Stored response bodies are left out: they
 * may hold customer data.
 */
export async function listIdempotencyKeys(
  ctx: { db: Database; tenantId: string },
  input: z.infer<typeof idempotencyKeysInput>,
) {
  const rows = await ctx.db
    .select({
      operation: idempotencyKeys.operation,
      key: idempotencyKeys.key,
      state: idempotencyKeys.state,
      recoveryPoint: idempotencyKeys.recoveryPoint,
      attempts: idempotencyKeys.attempts,
      responseStatus: idempotencyKeys.responseStatus,
      lockedUntil: idempotencyKeys.lockedUntil,
      createdAt: idempotencyKeys.createdAt,
      completedAt: idempotencyKeys.completedAt,
      expiresAt: idempotencyKeys.expiresAt,
    })
    .from(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.tenantId, ctx.tenantId),
        input.state ? eq(idempotencyKeys.state, input.state) : undefined,
      ),
    )
    .orderBy(desc(idempotencyKeys.createdAt), desc(idempotencyKeys.key))
    .limit(input.limit);
  return rows.map(isoTimes);
}

/**
 * One idempotency key of the caller's tenant as the operator sees it (state, recovery point,
 * attempts, lease, times, fingerprint prefix, the `revision` to act on, and whether release
 * or evict would be accepted), or null. Never the stored response body.
 */
export async function inspectIdempotencyKey(
  ctx: { keyOperator: KeyOperator; tenantId: string },
  input: z.infer<typeof idempotencyKeyInput>,
) {
  const found = await ctx.keyOperator.inspect({ tenantId: ctx.tenantId, ...input });
  return found ? isoTimes(found) : null;
}

/**
 * The one path of an operator's key action (`ops.releaseIdempotencyKey`,
 * `ops.evictIdempotencyKey`): scoped to the caller's tenant, refused unless the key is still
 * at the `revision` the operator saw (`idempotency_key_changed`), audited with the operator's
 * principal and reason in `idempotency_key_audit`; a refusal becomes its stable API code.
 */
export async function runKeyAction(
  action: 'release' | 'evict',
  ctx: { keyOperator: KeyOperator; tenantId: string; principal: string },
  input: z.infer<typeof idempotencyKeyActionInput>,
) {
  const { revision, reason, ...key } = input;
  try {
    const entry = await ctx.keyOperator[action](
      { tenantId: ctx.tenantId, ...key },
      { revision, reason, actor: ctx.principal },
    );
    return isoTimes(entry);
  } catch (error) {
    throw isKeyOperatorError(error) ? new ApiError(KEY_REFUSALS[error.code], error.message) : error;
  }
}
