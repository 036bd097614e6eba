/**
 * `npm run chaos -- [--seed N] [--profile ci|soak|failover|topology|dev] [--mode sync|async|strict]
 * [--intents N] [--browser N] [--duration SECONDS] [--events N] [--faults kind,kind] [--out DIR]`
 *
 * Starts the whole system (its own PostgreSQL, processor, workers, web) as real processes,
 * runs one seeded chaos run against it, prints the report and exits 1 on a violation, on a
 * client crash, or, for `ci`, on a fault kind that never bit or a coverage floor the run fell
 * short of (`PROFILES.ci.floors`), printing the command that replays the run.
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runChaos } from '@once/chaos';
import { repoRoot } from '@once/scripts/start-system';
import { chromium } from '@playwright/test';
import globalSetup from '../support/global-setup.ts';
import { startOnceTarget } from './once-target.ts';
import { parseChaosArgs, replayCommand } from './profiles.ts';

let args: ReturnType<typeof parseChaosArgs>;
try {
  args = parseChaosArgs(process.argv.slice(2));
} catch (error) {
  console.error(`chaos: ${(error as Error).message}`);
  process.exit(2);
}
const outDir = path.resolve(args.outDir ?? path.join(repoRoot, '.data/chaos', `seed-${args.seed}`));
mkdirSync(outDir, { recursive: true });
console.log(
  `chaos: seed ${args.seed}, profile ${args.profile.name}${args.profile.replication ? ` on a Patroni cluster (${args.profile.replication})` : ''} (${args.profile.intents} intents, ${args.profile.browserIntents} in a browser, ${args.profile.nemesisEvents} faults over ${args.profile.durationMs / 1000} s)`,
);
console.log(`chaos: replay with: ${replayCommand(args)}`);

// Rebuilds the web when its or a package's sources changed since the last build: a stale build
// on a database the new migrations changed answered every checkout 503.
globalSetup();
// The browser first: without one there is nothing to start the system for.
const executablePath = existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined;
const browser =
  args.profile.browserIntents > 0
    ? await chromium
        .launch({
          executablePath,
          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic'],
        })
        .catch((error: unknown) => {
          console.error(
            `chaos: no browser for the browser customers (${(error as Error).message.split('\n')[0]}). Install one (Debian: apt-get install chromium; elsewhere: npx playwright install chromium), or run with --browser 0.`,
          );
          process.exit(2);
        })
    : undefined;
const systemLog = path.join(outDir, 'system.log');
const target = await startOnceTarget({
  profile: args.profile,
  ...(browser && { browser }),
  log: (line) => {
    try {
      appendFileSync(systemLog, `${line}\n`);
    } catch {
      // The folder was removed under us: the run goes on, only the log is lost.
    }
  },
});
// Ctrl-C or a `kill`: exit at once. Stopping the system in order would race the nemesis,
// which is still restarting parts; exiting cannot hang, and cleans up just as well: the
// supervisor's tether kills every app's process group and PostgreSQL's child stops the
// server when our pipe to it closes.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    console.log(`chaos: ${signal}: exiting; the system stops with us`);
    process.exit(128 + os.constants.signals[signal]);
  });
}
let failed = true;
try {
  const result = await runChaos(args, target, { outDir, replay: replayCommand(args) });
  console.log(result.markdown);
  const neverFired = args.profileName === 'ci' ? result.coverage.neverFired : [];
  const topology = target.topologyFloors();
  if (topology.line) console.log(`chaos: ${topology.line}`);
  result.shortfalls.push(...topology.shortfalls);
  failed =
    result.check.violations.length > 0 || neverFired.length > 0 || result.shortfalls.length > 0;
  if (neverFired.length > 0)
    console.log(`chaos: fault kinds that never fired: ${neverFired.join(', ')}`);
  // Floors unmet or clients crashed: the run did too little to prove anything.
  if (result.shortfalls.length > 0)
    console.log(`chaos: the run proves too little: ${result.shortfalls.join('; ')}`);
  console.log(`chaos: report, history and timeline in ${outDir}`);
  // One machine-readable line (the planted-bug runner reads it).
  const kinds = [...new Set(result.check.violations.map((v) => v.kind))];
  console.log(
    `chaos: result: ${result.check.violations.length} violation(s)${kinds.length ? ` (${kinds.join(', ')})` : ''}`,
  );
  if (failed) console.log(`chaos: FAILED. Replay: ${result.replay}`);
} finally {
  await browser?.close();
  await target.stop();
}
process.exit(failed ? 1 : 0);
