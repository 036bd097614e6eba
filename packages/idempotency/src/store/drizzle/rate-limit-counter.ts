import { sql } from 'drizzle-orm';
import type { IdempotencyStore, RateLimitScope } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { preparedStatement } from './prepared-statement.ts';

const p = sql.placeholder;

/**
 * The increment only happens below the cap (`where new_keys < maxNewKeys`), so refusals never
 * push the counter up. `new_keys` is null when the window is full.
 */
const countNewKeyStatement = preparedStatement<{
  new_keys: number | null;
  retry_after_ms: number | string;
  window_start_ms: number | string;
}>(
  'once_idempotency_count_new_key_v3',
  sql`
      with w as (
        select to_timestamp(floor(extract(epoch from now()) * 1000 / ${p('windowMs')}::float8)
                 * ${p('windowMs')}::float8 / 1000) as start),
      counted as (
        insert into idempotency_rate_limits as r (tenant_id, principal, window_start, window_end, new_keys)
        select ${p('tenantId')}, ${p('principal')}, w.start, w.start + ${msInterval(p('windowMs'))}, 1 from w
        on conflict (tenant_id, principal, window_start) do update
          set new_keys = r.new_keys + 1
          where r.new_keys < ${p('maxNewKeys')}::int
        returning r.new_keys)
      select (select new_keys from counted) as new_keys,
             (extract(epoch from w.start + ${msInterval(p('windowMs'))} - now()) * 1000)::float8
               as retry_after_ms,
             (extract(epoch from w.start) * 1000)::float8 as window_start_ms
      from w`,
);

/** One count of a window given back by the request it counted (which stored no key). */
const giveBackNewKeyStatement = preparedStatement(
  'once_idempotency_give_back_new_key',
  sql`
      update idempotency_rate_limits set new_keys = new_keys - 1
      where tenant_id = ${p('tenantId')} and principal = ${p('principal')}
        and window_start = to_timestamp(${p('windowStartMs')}::float8 / 1000)
        and new_keys > 0`,
);

/** Read-only: how full the scope's current window is (atomic mode asks before the handler). */
const peekNewKeysStatement = preparedStatement<{ full: boolean; retry_after_ms: number | string }>(
  'once_idempotency_peek_new_keys',
  sql`
      with w as (
        select to_timestamp(floor(extract(epoch from now()) * 1000 / ${p('windowMs')}::float8)
                 * ${p('windowMs')}::float8 / 1000) as start)
      select coalesce((select r.new_keys >= ${p('maxNewKeys')}::int from idempotency_rate_limits r
                        where r.tenant_id = ${p('tenantId')} and r.principal = ${p('principal')}
                          and r.window_start = w.start), false) as full,
             (extract(epoch from w.start + ${msInterval(p('windowMs'))} - now()) * 1000)::float8
               as retry_after_ms
      from w`,
);

type NewKeyCount = Awaited<ReturnType<IdempotencyStore<unknown>['countNewKey']>>;
type NewKeyPeek = Awaited<ReturnType<IdempotencyStore<unknown>['peekNewKeys']>>;

/**
 * Add one new key to the fixed-window counter of `(tenant, principal)`; when the window is
 * already full, count nothing and say when it ends. ONE statement (an UPSERT whose update only
 * fires below the cap, under the row lock), so concurrent counts never pass the cap together.
 * Leased mode runs it in the reservation's transaction (so a refusal rolls both back); atomic
 * mode runs it alone before the handler and gives it back (`giveBackNewKey`) when the request
 * stores no key, never inside the business transaction, where the counter row would stay
 * locked and serialize the principal.
 */
export async function countNewKey(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  limit: { maxNewKeys: number; windowMs: number },
): Promise<NewKeyCount> {
  const [counter] = await countNewKeyStatement(executor, {
    tenantId: scope.tenantId,
    principal: scope.principal,
    windowMs: limit.windowMs,
    maxNewKeys: limit.maxNewKeys,
  });
  if (counter && counter.new_keys !== null)
    return { limited: false, windowStartMs: Number(counter.window_start_ms) };
  const retryAfterMs = Number(counter?.retry_after_ms ?? 0);
  return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * Whether the scope's current window is already full, without counting anything. The engines
 * no longer decide on it (a read before the handler and a count after it let a concurrent
 * burst pass the cap together): it stays for callers that only want to know.
 */
export async function peekNewKeys(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  limit: { maxNewKeys: number; windowMs: number },
): Promise<NewKeyPeek> {
  const [window] = await peekNewKeysStatement(executor, {
    tenantId: scope.tenantId,
    principal: scope.principal,
    windowMs: limit.windowMs,
    maxNewKeys: limit.maxNewKeys,
  });
  if (!window?.full) return { limited: false };
  const retryAfterMs = Number(window.retry_after_ms);
  return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * Give back one count of the window that started at `windowStartMs` (never below zero): the
 * atomic-mode request it was counted for stored no key (it failed, or met a duplicate).
 */
export async function giveBackNewKey(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  windowStartMs: number,
): Promise<void> {
  await giveBackNewKeyStatement(executor, {
    tenantId: scope.tenantId,
    principal: scope.principal,
    windowStartMs,
  });
}
