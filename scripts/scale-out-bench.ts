/**
 * `flock /tmp/once-heavy.lock npx tsx scripts/scale-out-bench.ts [--seconds 20] [--clients 24]
 * [--rounds 2]`: checkout throughput (201s a second of `POST /api/v1/payments`, each with a new
 * key, from `--clients` loops on this machine) and the connections PostgreSQL holds for the
 * app database (`pg_stat_activity`, sampled every 250 ms), for 1, 2 and 3 webs behind HAProxy,
 * with and without PgBouncer in transaction mode, one worker each, and what each checkout
 * costs PostgreSQL (`pg_stat_database`: transactions committed and sessions opened, the
 * worker's charge included). Every configuration runs once per round on one PostgreSQL, in
 * turn (the order reversed every other round), so the ratios compare runs on the same machine
 * at the same time; docs/scale-out.md has the results.
 */
import { parseArgs } from 'node:util';
import { findFreePort } from '@once/postgres';
import { spawnEmbeddedPostgres } from '@once/postgres/embedded';
import postgres from 'postgres';
import { startSystem } from './system/start-system.ts';
import { ensureWebBuild, TEST_NEXT_DIST_DIR } from './system/web-build.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    clients: { type: 'string', default: '24' },
    rounds: { type: 'string', default: '2' },
  },
});
const seconds = Number(values.seconds);
const clients = Number(values.clients);
const rounds = Number(values.rounds);
const CONFIGS = [1, 2, 3].flatMap((webs) => [
  { webs, pooler: false },
  { webs, pooler: true },
]);
const label = (c: (typeof CONFIGS)[number]) =>
  `${c.webs} web${c.webs > 1 ? 's' : ''}${c.pooler ? ', PgBouncer' : ''}`;

/** Posts checkouts with new keys from `clients` loops until `until`; counts the 201s by then. */
async function load(url: string, until: number) {
  const counts = {
    created: 0,
    /** Every 201, in the window or after it: what the database did the work for. */
    answered: 0,
    other: new Map<number | 'error' | 'timeout', number>(),
  };
  const body = JSON.stringify({ lines: [{ productId: 'book_sre', quantity: 1 }] });
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const response = await fetch(`${url}/api/v1/payments`, {
          method: 'POST',
          headers: {
            authorization: 'Bearer once_test_tenant_a',
            'idempotency-key': crypto.randomUUID(),
            'content-type': 'application/json',
          },
          body,
          // An answer 10 s past the window is counted as none (`timeout`), not waited for.
          signal: AbortSignal.timeout(until - Date.now() + 10_000),
        }).catch((error: Error) =>
          error.name === 'TimeoutError' ? ('timeout' as const) : undefined,
        );
        if (response === 'timeout') {
          counts.other.set('timeout', (counts.other.get('timeout') ?? 0) + 1);
          continue;
        }
        await response?.arrayBuffer().catch(() => {});
        if (response?.status === 201) counts.answered++;
        if (response?.status === 201 && Date.now() <= until) counts.created++;
        else if (response?.status !== 201) {
          const status = response?.status ?? 'error';
          counts.other.set(status, (counts.other.get(status) ?? 0) + 1);
        }
      }
    }),
  );
  return counts;
}

// The systems start with `skipBuild`: a build older than the sources would measure other code.
ensureWebBuild(TEST_NEXT_DIST_DIR);
const pg = await spawnEmbeddedPostgres({
  durability: 'fast',
  databases: ['once', 'once_processor'],
});
const admin = postgres(pg.databaseUrl('postgres'), { max: 1, onnotice: () => {} });
// Opened once, left out of the samples; each of its queries is one commit, taken off the counts.
const appDb = postgres(pg.databaseUrl('once'), {
  max: 1,
  onnotice: () => {},
  connection: { application_name: 'scale-out-bench' },
});
let ownCommits = 0;

/** Waits (20 s at most) until the worker has charged every checkout, then for its statistics. */
async function drained() {
  const deadline = Date.now() + 20_000;
  for (;;) {
    ownCommits++;
    const [row] = await appDb<{ n: number }[]>`
      select count(*)::int as n from outbox_jobs where status in ('pending', 'running')`;
    if (row!.n === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // A busy backend publishes its counts at most once a second and an idle one may hold its last
  // second's until it next works or exits: each edge of the window is that much off.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const [row] = await admin<{ commits: number; sessions: number }[]>`
    select xact_commit::int as commits, sessions::int as sessions
    from pg_stat_database where datname = 'once'`;
  return { commits: row!.commits - ownCommits, sessions: row!.sessions };
}

const results = new Map<
  string,
  {
    rps: number[];
    maxConnections: number[];
    commitsPerCheckout: number[];
    sessionsOpened: number[];
  }
>();
try {
  for (let round = 0; round < rounds; round++) {
    for (const config of round % 2 ? [...CONFIGS].reverse() : CONFIGS) {
      const system = await startSystem({
        databaseUrl: pg.databaseUrl('once'),
        processorDatabaseUrl: pg.databaseUrl('once_processor'),
        webs: config.webs,
        pooler: config.pooler,
        workerCount: 1,
        skipBuild: true,
        nextDistDir: TEST_NEXT_DIST_DIR,
        webPort: await findFreePort(),
        processorPort: await findFreePort(),
        workerHealthBasePort: await findFreePort(),
        // The tenant's new-key cap (600 a minute, shared by every web) would cap the load.
        env: { ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0' },
        log: () => {},
      });
      try {
        await load(system.webUrl, Date.now() + 3_000); // warm-up: JIT, pools, the proxy's checks
        const before = await drained();
        const samples: number[] = [];
        const sampler = setInterval(() => {
          void admin<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
            where datname = 'once' and backend_type = 'client backend'
              and application_name <> 'scale-out-bench'`.then(([row]) => samples.push(row!.n));
        }, 250);
        const started = Date.now();
        const { created, answered, other } = await load(system.webUrl, started + seconds * 1000);
        clearInterval(sampler);
        const after = await drained();
        const rps = created / seconds;
        const commitsPerCheckout = (after.commits - before.commits) / answered;
        const sessionsOpened = after.sessions - before.sessions;
        const entry = results.get(label(config)) ?? {
          rps: [],
          maxConnections: [],
          commitsPerCheckout: [],
          sessionsOpened: [],
        };
        entry.rps.push(rps);
        entry.maxConnections.push(Math.max(...samples));
        entry.commitsPerCheckout.push(commitsPerCheckout);
        entry.sessionsOpened.push(sessionsOpened);
        results.set(label(config), entry);
        console.log(
          `round ${round + 1}, ${label(config)}: ${rps.toFixed(1)} checkouts/s (not 201: ${JSON.stringify(Object.fromEntries(other))}), ` +
            `connections max ${Math.max(...samples)}, ${commitsPerCheckout.toFixed(2)} commits a checkout ` +
            `(${answered} answered), ${sessionsOpened} sessions opened`,
        );
      } finally {
        await system.stop();
      }
    }
  }
} finally {
  await appDb.end({ timeout: 2 });
  await admin.end({ timeout: 2 });
  await pg.stop();
}

const perRound = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(', ');
const base = results.get(label(CONFIGS[0]!))!.rps;
console.log(
  `\n| configuration | checkouts/s, rounds 1..${rounds} | vs 1 web in the same round | PostgreSQL connections, max | commits a checkout | sessions opened |`,
);
console.log('|---|---|---|---|---|---|');
for (const config of CONFIGS) {
  const r = results.get(label(config))!;
  const ratios = r.rps.map((rps, round) => rps / base[round]!);
  console.log(
    `| ${label(config)} | ${perRound(r.rps, 1)} | ${perRound(ratios, 2)} | ` +
      `${r.maxConnections.join(', ')} | ${perRound(r.commitsPerCheckout, 2)} | ${r.sessionsOpened.join(', ')} |`,
  );
}
