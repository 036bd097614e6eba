import { sql } from 'drizzle-orm';
import type { IdempotencyStore } from '../../core/types.ts';
import type { AnyPgDatabase } from './drizzle-types.ts';
import { msInterval } from './interval-sql.ts';
import { preparedStatement } from './prepared-statement.ts';

const p = sql.placeholder;

/** Built once and prepared per connection (see `preparedStatement`): it runs for every new key. */
const countNewKeyStatement = preparedStatement<{
  new_keys: number;
  retry_after_ms: number | string;
}>(
  'once_idempotency_count_new_key',
  sql`
      with w as (
        select to_timestamp(floor(extract(epoch from now()) * 1000 / ${p('windowMs')}::float8)
                 * ${p('windowMs')}::float8 / 1000) as start)
      insert into idempotency_rate_limits (tenant_id, window_start, window_end, new_keys)
      select ${p('tenantId')}, w.start, w.start + ${msInterval(p('windowMs'))}, 1 from w
      on conflict (tenant_id, window_start) do update
        set new_keys = idempotency_rate_limits.new_keys + 1
      returning new_keys, (extract(epoch from window_end - now()) * 1000)::float8 as retry_after_ms`,
);

type NewKeyCount = Awaited<ReturnType<IdempotencyStore<unknown>['countNewKey']>>;

/**
 * Add one new key to the tenant's fixed-window counter; over `maxNewKeys`, say when the window
 * ends. Leased mode runs it in the reservation's transaction (so a refusal rolls both back);
 * atomic mode runs it alone, never inside the business transaction, where the tenant's counter
 * row would stay locked and serialize the tenant.
 */
export async function countNewKey(
  executor: AnyPgDatabase,
  tenantId: string,
  limit: { maxNewKeys: number; windowMs: number },
): Promise<NewKeyCount> {
  const [counter] = await countNewKeyStatement(executor, { tenantId, windowMs: limit.windowMs });
  if (Number(counter?.new_keys ?? 0) <= limit.maxNewKeys) return { limited: false };
  const retryAfterMs = Number(counter?.retry_after_ms ?? 0);
  return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}
