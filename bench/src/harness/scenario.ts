import type { BenchArgs } from './args.ts';
import { type LoadResult, serverCpuPerRequest } from './load.ts';
import type { BenchPostgres } from './postgres.ts';
import type { BenchRedis } from './redis.ts';
import type { ResultRow, ScenarioResult } from './result-types.ts';
import { round } from './stats.ts';

/** What every scenario gets from the runner. */
export interface ScenarioContext {
  args: BenchArgs;
  pg: BenchPostgres;
  /** Undefined when redis-server is not installed. */
  redis: BenchRedis | undefined;
  /** Measured seconds per variant (warm-up excluded). */
  measureSec: number;
  warmupSec: number;
  log(line: string): void;
}

export interface Scenario {
  name: string;
  title: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** The body every HTTP variant sends (the same cart line). */
export const PAY_BODY = JSON.stringify({ productId: 'book_sre', quantity: 1 });

/** A table row from an HTTP load. */
export function rowFromLoad(
  name: string,
  result: LoadResult,
  extra: ResultRow['extra'] = {},
): ResultRow {
  const statuses = Object.entries(result.statuses)
    .map(([status, count]) => `${status}:${count}`)
    .join(' ');
  const failures = result.errors + result.timeouts;
  const cpu = serverCpuPerRequest(result);
  return {
    name,
    throughput: result.throughput,
    latency: result.latency,
    extra: {
      statuses,
      ...(cpu === undefined ? {} : { 'server CPU ms/req': round(cpu) }),
      ...(failures ? { 'socket errors': failures } : {}),
      ...extra,
    },
  };
}
