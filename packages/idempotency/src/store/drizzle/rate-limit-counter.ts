import { sql } from 'drizzle-orm';
import { type AnyPgDatabase, rowsOf } from './drizzle-types.ts';

const ms = (value: number) => sql`(${value}::float8 * interval '1 millisecond')`;

/**
 * Add one new key to the tenant's fixed-window counter and return the window's count and the
 * milliseconds until it ends. Leased mode runs it in the reservation's transaction (so a
 * refusal rolls both back); atomic mode runs it alone, never inside the business transaction,
 * where the tenant's counter row would stay locked and serialize the tenant.
 */
export async function countNewKey(
  executor: AnyPgDatabase,
  tenantId: string,
  windowMs: number,
): Promise<{ newKeys: number; retryAfterMs: number }> {
  const [counter] = rowsOf<{ new_keys: number; retry_after_ms: number | string }>(
    await executor.execute(sql`
      with w as (
        select to_timestamp(floor(extract(epoch from now()) * 1000 / ${windowMs}::float8)
                 * ${windowMs}::float8 / 1000) as start)
      insert into idempotency_rate_limits (tenant_id, window_start, window_end, new_keys)
      select ${tenantId}, w.start, w.start + ${ms(windowMs)}, 1 from w
      on conflict (tenant_id, window_start) do update
        set new_keys = idempotency_rate_limits.new_keys + 1
      returning new_keys, (extract(epoch from window_end - now()) * 1000)::float8 as retry_after_ms`),
  );
  return {
    newKeys: Number(counter?.new_keys ?? 0),
    retryAfterMs: Number(counter?.retry_after_ms ?? 0),
  };
}
