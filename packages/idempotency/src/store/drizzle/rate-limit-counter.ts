import { sql } from 'drizzle-orm';
import type { IdempotencyStore, RateLimitScope } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { preparedStatement } from './prepared-statement.ts';

const p = sql.placeholder;
type Limit = { maxNewKeys: number; windowMs: number };

/** The emission interval, `windowMs / maxNewKeys`, cut to whole microseconds (a timestamptz's). */
const interval = sql`(floor(${p('windowMs')}::float8 * 1000 / ${p('maxNewKeys')}::int)
                      * interval '1 microsecond')`;
const window = msInterval(p('windowMs'));

/**
 * The update only fires while the theoretical arrival time stays within a window of now, so a
 * refusal moves nothing. The time is `clock_timestamp()`, read as the row is inserted or once
 * its lock is held, so concurrent counts see times in the order they take the row: `now()` is
 * the transaction's start, older than the time a count that locked the row first used (a
 * burst's last key would lose its place) and, inserting, an arrival time already past (a burst
 * one key longer). A refusal reads the row it met under its lock (`for share` follows a
 * concurrent update to its newest version). Its wait is at most one interval: no admission puts
 * the time more than a window past its own `now()`, and a statement that waited for the lock
 * has an older `now()` (a row created after it began is not readable at all: one interval).
 */
const countNewKeyStatement = preparedStatement<{
  admitted: boolean;
  retry_after_ms: number | string | null;
}>(
  'once_idempotency_count_new_key_v6',
  sql`
      with attempt as (
        insert into idempotency_rate_limits as r (tenant_id, principal, theoretical_arrival)
        values (${p('tenantId')}, ${p('principal')}, clock_timestamp() + ${interval})
        on conflict (tenant_id, principal) do update
          set theoretical_arrival = greatest(r.theoretical_arrival, clock_timestamp()) + ${interval}
          where greatest(r.theoretical_arrival, clock_timestamp()) + ${interval}
                  <= clock_timestamp() + ${window}
        returning 1)
      select exists (select from attempt) as admitted,
             case when not exists (select from attempt) then
               (extract(epoch from least(
                  (select r.theoretical_arrival + ${interval} - ${window} - now()
                     from idempotency_rate_limits r
                    where r.tenant_id = ${p('tenantId')} and r.principal = ${p('principal')}
                    for share),
                  ${interval})) * 1000)::float8
             end as retry_after_ms`,
);

/** One interval given back by the request it counted (which stored no key), never below now. */
const giveBackNewKeyStatement = preparedStatement(
  'once_idempotency_give_back_new_key_v2',
  sql`
      update idempotency_rate_limits
         set theoretical_arrival = greatest(theoretical_arrival - ${interval}, now())
       where tenant_id = ${p('tenantId')} and principal = ${p('principal')}
         and theoretical_arrival > now()`,
);

/** Read-only: how long one more new key would be refused for now (0 or less: it fits). */
const peekNewKeysStatement = preparedStatement<{ retry_after_ms: number | string | null }>(
  'once_idempotency_peek_new_keys_v2',
  sql`
      select (extract(epoch from r.theoretical_arrival + ${interval} - ${window} - now())
                * 1000)::float8 as retry_after_ms
        from idempotency_rate_limits r
       where r.tenant_id = ${p('tenantId')} and r.principal = ${p('principal')}`,
);

type NewKeyCount = Awaited<ReturnType<IdempotencyStore<unknown>['countNewKey']>>;
type NewKeyPeek = Awaited<ReturnType<IdempotencyStore<unknown>['peekNewKeys']>>;

const parameters = (scope: RateLimitScope, limit: Limit) => ({
  tenantId: scope.tenantId,
  principal: scope.principal,
  windowMs: limit.windowMs,
  maxNewKeys: limit.maxNewKeys,
});

const refusal = (retryAfterMs: number) =>
  ({ limited: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) }) as const;

/**
 * Count one new key of `(tenant, principal)` with a generic cell rate algorithm, as the apps'
 * `RateLimits` does: each admitted key moves the row's theoretical arrival time one interval
 * (`windowMs / maxNewKeys`) on, and a key that would put it more than `windowMs` ahead of now is
 * refused, counting nothing. A burst of `maxNewKeys`, then one more per interval: no window
 * boundary where twice the cap fits. ONE statement (an UPSERT under the row lock), so
 * concurrent counts never pass the cap together. Leased mode runs it in the reservation's
 * transaction (so a refusal rolls both back); atomic mode runs it alone before the handler and
 * gives it back (`giveBackNewKey`) when the request stores no key, never inside the business
 * transaction, where the row would stay locked and serialize the principal.
 */
export async function countNewKey(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  limit: Limit,
): Promise<NewKeyCount> {
  const [row] = await countNewKeyStatement(executor, parameters(scope, limit));
  if (row?.admitted) return { limited: false };
  return refusal(Number(row?.retry_after_ms ?? 0));
}

/**
 * Whether one more new key would be refused now, without counting anything. The engines no
 * longer decide on it (a read before the handler and a count after it let a concurrent burst
 * pass the cap together): it stays for callers that only want to know.
 */
export async function peekNewKeys(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  limit: Limit,
): Promise<NewKeyPeek> {
  const [row] = await peekNewKeysStatement(executor, parameters(scope, limit));
  const retryAfterMs = Number(row?.retry_after_ms ?? 0);
  return retryAfterMs > 0 ? refusal(retryAfterMs) : { limited: false };
}

/**
 * Give back one count (the theoretical arrival time one interval back, never before now): the
 * atomic-mode request it was counted for stored no key (it failed, or met a duplicate).
 */
export async function giveBackNewKey(
  executor: AnyPgDatabase,
  scope: RateLimitScope,
  limit: Limit,
): Promise<void> {
  await giveBackNewKeyStatement(executor, parameters(scope, limit));
}
