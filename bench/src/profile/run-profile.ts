// `npx tsx bench/src/profile/run-profile.ts <label> [seconds] [routes]`: CPU profiles of the
// bench server under load, one process per route, written as docs/profiles/<label>-<route>.svg
// flame graphs and a self-time summary docs/profiles/<label>-summary.md.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startBenchServer } from '../harness/bench-server.ts';
import { runLoad } from '../harness/load.ts';
import { startBenchPostgres } from '../harness/postgres.ts';
import { PAY_BODY } from '../harness/scenario.ts';
import { repoRoot } from '../harness/server-process.ts';
import { type CpuProfile, flameGraphSvg, inclusiveShare, tallyCpu } from './flamegraph.ts';

const ROUTES = [
  ['trpc-plain', '/trpc/pay.plain'],
  ['trpc-floor-in-tx', '/trpc/pay.floorInTransaction'],
  ['trpc-floor', '/trpc/pay.floor'],
  ['trpc-atomic', '/trpc/pay.guardedAtomic'],
  ['trpc-atomic-always-read', '/trpc/pay.guardedAtomicAlwaysRead'],
  ['trpc-leased', '/trpc/pay.guarded'],
  ['fetch-plain', '/fetch/plain'],
  ['fetch-floor-in-tx', '/fetch/floor-in-transaction'],
  ['fetch-floor', '/fetch/floor'],
  ['fetch-atomic', '/fetch/guarded-atomic'],
  ['fetch-atomic-always-read', '/fetch/guarded-atomic-always-read'],
  ['fetch-leased', '/fetch/guarded'],
] as const;

/** Where a request's CPU goes, by inclusive time of the frames that match. */
const BUCKETS: [string, RegExp][] = [
  ['@once/idempotency (all)', /packages\/idempotency\//],
  ['fingerprint / canonical JSON', /fingerprint|canonical/i],
  ['drizzle-orm (query building, mapping)', /drizzle-orm\//],
  ['postgres.js (protocol)', /^[^ ]* postgres\//],
  ['tRPC', /@trpc\//],
  ['garbage collector', /^\(garbage collector\)/],
];

const label = process.argv[2] ?? 'before';
const seconds = Number(process.argv[3] ?? 8);
const only = process.argv[4]?.split(',');
const outDir = path.join(repoRoot, 'docs/profiles');
await mkdir(outDir, { recursive: true });
const pg = await startBenchPostgres();
const summary: string[] = [
  `# CPU profiles: ${label}`,
  '',
  `Each route under 16 connections for ${seconds} s (after 2 s warm-up), a new key per request, one server process per route (\`node --cpu-prof\`). Shares are of the server's sampled CPU time; ms/request = profiled CPU time / responses. Load average at start: ${os.loadavg()[0]!.toFixed(2)}.`,
  '',
];
try {
  for (const [name, route] of ROUTES) {
    if (only && !only.includes(name)) continue;
    const profDir = await mkdtemp(path.join(os.tmpdir(), 'once-prof-'));
    const server = await startBenchServer({
      databaseUrl: pg.url,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    });
    let responses = 0;
    try {
      const result = await runLoad({
        url: server.url,
        path: route,
        body: PAY_BODY,
        connections: 16,
        durationSec: seconds,
        warmupSec: 2,
        key: () => randomUUID(),
      });
      responses = result.samples.length;
      console.log(
        `${name}: ${result.throughput.toFixed(0)} ops/s, statuses ${JSON.stringify(result.statuses)}`,
      );
    } finally {
      await server.stop();
    }
    const file = (await readdir(profDir)).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile written for ${name}`);
    const profile = JSON.parse(await readFile(path.join(profDir, file), 'utf8')) as CpuProfile;
    await writeFile(
      path.join(outDir, `${label}-${name}.svg`),
      flameGraphSvg(profile, `${label}: ${name} (${route})`),
    );
    const totalMs = (profile.endTime - profile.startTime) / 1000;
    const samples = tallyCpu(profile);
    const idle = (samples.self.get('(idle)') ?? 0) / samples.total;
    summary.push(`## ${name} (\`${route}\`)`, '');
    summary.push(
      `- ${responses} responses measured (+ warm-up); busy CPU ${(((1 - idle) * totalMs) / Math.max(1, responses)).toFixed(3)} ms per measured response (includes warm-up work, so an upper bound)`,
    );
    for (const [bucket, match] of BUCKETS)
      summary.push(`- ${bucket}: ${(inclusiveShare(profile, match) * 100).toFixed(1)}% of samples`);
    summary.push('', 'Top self time:', '', '| share | frame |', '|---:|---|');
    for (const [frame, hits] of [...samples.self].sort((a, b) => b[1] - a[1]).slice(0, 25))
      summary.push(`| ${((hits / samples.total) * 100).toFixed(1)}% | \`${frame}\` |`);
    summary.push('');
  }
} finally {
  await pg.stop();
}
await writeFile(path.join(outDir, `${label}-summary.md`), summary.join('\n'));
console.log(`wrote ${outDir}/${label}-*`);
