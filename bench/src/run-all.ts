// `npm run bench [-- --quick] [-- --only <name>]`: starts durable Postgres (and Redis for the
// peers), runs each scenario against its baseline, prints tables, writes bench/results/*.json
// and docs/benchmarks.md.
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from './harness/args.ts';
import { startBenchPostgres } from './harness/postgres.ts';
import {
  type BenchRedis,
  REDIS_INSTALL_HINT,
  redisAvailable,
  startBenchRedis,
} from './harness/redis.ts';
import {
  describeMachine,
  mergeRuns,
  type RunReport,
  renderMarkdown,
  writeMarkdown,
  writeResultJson,
} from './harness/report.ts';
import type { ScenarioResult } from './harness/result-types.ts';
import { type Scenario, type ScenarioContext, skipped } from './harness/scenario.ts';
import { stopAllChildren } from './harness/server-process.ts';
import { renderGoals, renderTable } from './harness/table.ts';
import { databaseWork } from './scenarios/database-work.ts';
import { endToEnd } from './scenarios/end-to-end.ts';
import { growth } from './scenarios/growth.ts';
import { guardCpu } from './scenarios/guard-cpu.ts';
import { hotKey } from './scenarios/hot-key.ts';
import { overhead } from './scenarios/overhead.ts';
import { peers } from './scenarios/peers.ts';
import { replay } from './scenarios/replay.ts';
import { retention } from './scenarios/retention.ts';
import { storeThroughput } from './scenarios/store-throughput.ts';

const scenarios: Scenario[] = [
  // First, while the machine is quiet: after the others it reads every route slower
  // (bench/analysis.md), which no minimum of rounds removes.
  guardCpu,
  overhead,
  replay,
  hotKey,
  storeThroughput,
  endToEnd,
  peers,
  databaseWork,
  // Last: a million inserted and reaped rows leave WAL, dead tuples and autovacuum work behind.
  retention,
  // After the last: it leaves millions of rows in the app database.
  growth,
];

const args = parseArgs(process.argv.slice(2));
const unknown = args.only.filter((name) => !scenarios.some((s) => s.name === name));
if (unknown.length) {
  console.error(
    `unknown scenario(s) ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`,
  );
  process.exit(2);
}
if (args.render.length) {
  // Re-publish finished runs (e.g. after editing bench/analysis.md) without measuring again.
  const [base, ...partials] = await Promise.all(
    args.render.map(async (file) => ({
      file,
      report: JSON.parse(await readFile(file, 'utf8')) as RunReport,
    })),
  );
  const report = mergeRuns(base!.report, partials);
  const file = await writeMarkdown(renderMarkdown(report, path.resolve(base!.file)));
  console.log(`[bench] wrote ${file} from ${args.render.join(', ')}`);
  process.exit(0);
}
const selected = args.only.length ? scenarios.filter((s) => args.only.includes(s.name)) : scenarios;
const log = (line: string) => console.log(`[bench] ${line}`);

const startedAt = new Date().toISOString();
const machine = describeMachine();
log(
  `${machine.cpuModel}, ${machine.cores} cores, load ${machine.loadAverage.join(' ')}${args.quick ? ' (quick)' : ''}`,
);
const pg = await startBenchPostgres();
log(
  `postgres ${pg.settings.server_version} fsync=${pg.settings.fsync} synchronous_commit=${pg.settings.synchronous_commit}`,
);
let redis: BenchRedis | undefined;
if (redisAvailable()) redis = await startBenchRedis();
else log(REDIS_INSTALL_HINT);

// Ctrl-C: stop every process this run started (servers, workers, Redis, Postgres) before exiting.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    log(`${signal}: stopping`);
    await stopAllChildren();
    await redis?.stop();
    await pg.stop();
    process.exit(130);
  });
}

const ctx: ScenarioContext = {
  args,
  pg,
  redis,
  measureSec: args.quick ? 1.5 : 6,
  warmupSec: args.quick ? 0.5 : 2,
  log,
};
const results: ScenarioResult[] = [];
/** Scenarios that threw: a bug or a broken start-up, unlike a peer skipped for want of Redis. */
const failed: string[] = [];
try {
  for (const scenario of selected) {
    log(`--- ${scenario.title}`);
    const started = performance.now();
    const loadBefore = os.loadavg()[0]!;
    try {
      results.push({ name: scenario.name, title: scenario.title, ...(await scenario.run(ctx)) });
    } catch (error) {
      log(`${scenario.name} failed: ${(error as Error).stack ?? error}`);
      failed.push(scenario.name);
      const why = `failed: ${(error as Error).message.split('\n')[0]}`;
      results.push({ name: scenario.name, title: scenario.title, ...skipped(why) });
    }
    const result = results.at(-1)!;
    // How busy the machine was around this scenario (other work shares the 2 cores).
    result.settings.loadAverage1m = `${loadBefore.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)}`;
    console.log(`\n${result.title}\n\n${renderTable(result)}\n${renderGoals(result)}\n`);
    log(`${scenario.name} took ${Math.round((performance.now() - started) / 1000)} s`);
  }
} finally {
  await redis?.stop();
  await pg.stop();
}
// Said again after the tables: a skipped scenario must not go unnoticed at the end of a long run.
if (!redis && selected.some((scenario) => scenario.name === 'peers')) log(REDIS_INSTALL_HINT);

const report: RunReport = {
  startedAt,
  finishedAt: new Date().toISOString(),
  args,
  machine,
  loadAverageAfter: os.loadavg().map((l) => Math.round(l * 100) / 100),
  postgres: pg.settings,
  redis: redis
    ? `redis-server ${redis.version}, --save '' --appendonly no`
    : 'not installed (peer scenario skipped)',
  measureSec: ctx.measureSec,
  warmupSec: ctx.warmupSec,
  scenarios: results,
};
const resultFile = await writeResultJson(report);
log(`wrote ${resultFile}`);
// Only a full run may replace the published numbers; smoke and partial runs leave them alone.
if (!args.quick && args.only.length === 0)
  log(`wrote ${await writeMarkdown(renderMarkdown(report, resultFile))}`);
else log('docs/benchmarks.md not updated (--quick or --only run)');
if (failed.length > 0) {
  // The tables are written either way; the exit status says the run is incomplete.
  log(`${failed.length} scenario(s) failed: ${failed.join(', ')} (see the log above)`);
  process.exitCode = 1;
}
