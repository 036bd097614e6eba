import { randomUUID } from 'node:crypto';
import type { BenchArgs } from './args.ts';
import type { BenchServer } from './bench-server.ts';
import { type LoadOptions, type LoadResult, serverCpuPerRequest } from './load.ts';
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
  /** The result without the scenario's name and title (the runner adds them). */
  run(ctx: ScenarioContext): Promise<ScenarioOutcome>;
}

export type ScenarioOutcome = Omit<ScenarioResult, 'name' | 'title'>;

/** A scenario that did not run, and why. */
export function skipped(why: string): ScenarioOutcome {
  return { skipped: why, settings: {}, rows: [], goals: [], notes: [] };
}

/** The body every HTTP variant sends (the same cart line). */
export const PAY_BODY = JSON.stringify({ productId: 'book_sre', quantity: 1 });

/**
 * The measured load the HTTP scenarios run: `PAY_BODY` to one route of the bench server for the
 * run's measure and warm-up time, a new key per request, server CPU counted. `options` override.
 */
export function payLoad(
  server: BenchServer,
  ctx: ScenarioContext,
  path: string,
  connections: number,
  options: Partial<LoadOptions> = {},
): LoadOptions {
  return {
    url: server.url,
    path,
    body: PAY_BODY,
    connections,
    durationSec: ctx.measureSec,
    warmupSec: ctx.warmupSec,
    key: () => randomUUID(),
    serverCpuMs: server.cpuMs,
    ...options,
  };
}

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
    ...(result.roundThroughputs ? { rounds: result.roundThroughputs.map(round) } : {}),
  };
}
