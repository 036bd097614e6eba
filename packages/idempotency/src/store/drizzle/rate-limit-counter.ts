import { sql } from 'drizzle-orm';
import type { IdempotencyStore, RateLimitScope } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { preparedStatement } from './prepared-statement.ts';

const p = sql.placeholder;

/**
 * Built once and prepared per connection (see `preparedStatement`): it runs for every new key.
 * The increment only happens below the cap (`where new_keys < maxNewKeys`), so refusals never
 * push the counter up. `new_keys` is null when the window is full.
 */
const countNewKeyStatement = preparedStatement<{
  new_keys: number | null;
  retry_after_ms: number | string;
}>(
  'once_idempotency_count_new_key_v2',
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
               as retry_after_ms
      from w`,
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
 * already full, count nothing and say when it ends. Leased mode runs it in the reservation's
 * transaction (so a refusal rolls both back); atomic mode runs it alone once its key is
 * stored, never inside the business transaction, where the counter row would stay locked and
 * serialize the principal.
 *
 * @example
 * const counted = await countNewKey(db, { tenantId: 't1', principal: 'session:abc' }, { maxNewKeys: 600, windowMs: 60_000 });
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
  if (counter && counter.new_keys !== null) return { limited: false };
  const retryAfterMs = Number(counter?.retry_after_ms ?? 0);
  return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * Whether the scope's current window is already full, without counting anything. Atomic mode
 * refuses on it before the handler and counts with `countNewKey` only once its key is stored,
 * so refused input and racing duplicates never spend allowance.
 *
 * @example
 * const peeked = await peekNewKeys(db, { tenantId: 't1', principal: 'session:abc' }, { maxNewKeys: 600, windowMs: 60_000 });
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
