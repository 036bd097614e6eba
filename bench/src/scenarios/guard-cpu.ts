import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createIdempotency, type IdempotencyOptions } from '@once/idempotency';
import { fetchIdempotency, responseOf, storedJson } from '@once/idempotency/fetch';
import { initTRPC } from '@trpc/server';
import type { GoalResult, ResultRow } from '../harness/result-types.ts';
import { PAY_BODY, type Scenario, type ScenarioOutcome } from '../harness/scenario.ts';
import { median, round } from '../harness/stats.ts';
import { allocatedBytesPerRun, SAMPLING_INTERVAL_BYTES } from '../profile/allocated-bytes.ts';
import { BENCH_TENANT, type BenchPayResult, parsePayInput } from '../servers/payment-write.ts';
import { benchTrpc, trpcFetchHandler } from '../servers/trpc-routes.ts';

const ROUNDS = 8;
/**
 * Fresh processes per run, each its own rounds; a figure is the median of theirs: one process
 * can read a route tens of µs off for its whole life (its JIT's choices, not interference).
 */
const PROCESSES = 3;
const execFileAsync = promisify(execFile);
/** Issue 28's goals for what the guard adds to a request, atomic mode, over its unguarded twin. */
const GOAL_GUARD_US = 20;
const GOAL_GUARD_BYTES = 2048;

/** Each variant: its name, the handler and route it is sent to, and the twin its guard is read against. */
const VARIANTS = [
  ['tRPC unguarded', 'trpc', 'plain'],
  ['tRPC + a no-op plugin', 'trpc', 'noop', 'tRPC unguarded'],
  ['tRPC + plugin, atomic mode', 'trpc', 'atomic', 'tRPC unguarded'],
  ['tRPC + plugin, leased mode', 'trpc', 'leased', 'tRPC unguarded'],
  ['fetch unguarded', 'fetch', 'plain'],
  ['fetch + handle, atomic mode', 'fetch', 'atomic', 'fetch unguarded'],
  ['fetch + handle, leased mode', 'fetch', 'leased', 'fetch unguarded'],
  // The form the bench's and the apps' fetch routes complete with (`storedJson`).
  [
    'fetch + handle, atomic, completed with the stored form',
    'fetch',
    'atomic-stored',
    'fetch unguarded',
  ],
] as const;

/** A store that answers every call at once, as for a brand-new key, and remembers nothing. */
const answeringStore = {
  lookup: async () => undefined,
  insertCompleted: async () => 'inserted' as const,
  reserve: async () => ({
    kind: 'acquired' as const,
    created: true,
    takenOver: false,
    record: {
      state: 'in_progress' as const,
      fingerprint: '',
      ownerToken: null,
      lockedUntil: null,
      recoveryPoint: 'started',
      recoveryData: null,
      response: null,
      now: new Date(),
    },
  }),
  complete: async () => 'ok' as const,
  advance: async () => 'ok' as const,
  renew: async () => 'ok' as const,
  release: async () => 'ok' as const,
  endLease: async () => 'ok' as const,
  markUnknown: async () => 'ok' as const,
  isCompletedBy: async () => true,
  countNewKey: async () => ({ limited: false as const }),
  peekNewKeys: async () => ({ limited: false as const }),
} as unknown as IdempotencyOptions<undefined>['store'];

/** What the payment write answers, without the write: the same object every variant returns. */
const RESULT: BenchPayResult = {
  paymentId: 'pay_5f0c2a9e1b7d4c3a8e6f0b1d2c3a4e5f',
  status: 'processing',
  amount: 4200,
  currency: 'eur',
};

/**
 * 8. The guard's own CPU per request, no database: the bench server's tRPC and fetch routes
 * in fresh processes (no HTTP), unguarded and guarded, over a store that answers at once, one
 * request at a time. The minimum over interleaved rounds is the cost with the least
 * interference; the difference to the unguarded twin is what the library's JavaScript adds.
 * Then the heap bytes each variant allocates per request (V8's sampling heap profiler).
 */
export const guardCpu: Scenario = {
  name: 'guard-cpu',
  title: "8. The guard's own CPU per request (no database)",
  async run(ctx): Promise<ScenarioOutcome> {
    const perRound = ctx.args.quick ? 1_000 : 5_000;
    const processes: Measured[] = [];
    for (let i = 0; i < PROCESSES; i++) processes.push(await measureInFreshProcess(perRound));
    const best = medianPerVariant(processes.map((m) => m.cpuUs));
    const bytes = medianPerVariant(processes.map((m) => m.bytes));
    /** The guard's µs above `twin` as each process read it, for the goal's detail. */
    const perProcess = (name: string, twin: string) =>
      processes.map((m) => round(m.cpuUs[name]! - m.cpuUs[twin]!)).join(', ');
    const row = (name: string, twin?: string): ResultRow => {
      const us = best.get(name)!;
      return {
        name,
        ...(twin ? { comparedTo: twin } : {}),
        throughput: 1e6 / us,
        extra: {
          'CPU µs/request': round(us),
          'guard µs/request': twin ? round(us - best.get(twin)!) : '',
          'heap bytes/request': Math.round(bytes.get(name)!),
          'guard bytes/request': twin ? Math.round(bytes.get(name)! - bytes.get(twin)!) : '',
        },
      };
    };
    const guard = (name: string, twin: string) => round(best.get(name)! - best.get(twin)!);
    const guardBytes = (name: string, twin: string) =>
      Math.round(bytes.get(name)! - bytes.get(twin)!);
    /**
     * The goals read the guard against its floor: for tRPC the no-op plugin (tRPC's own
     * middleware level, which any plugin pays), for fetch the unguarded route. The detail also
     * gives the cost above the unguarded route.
     */
    const goal = (what: string, name: string, floor: string, unguarded: string): GoalResult[] => {
      const us = guard(name, floor);
      const allocated = guardBytes(name, floor);
      const also =
        floor === unguarded
          ? ''
          : ` above ${floor}; ${guard(name, unguarded)} µs and ${guardBytes(name, unguarded)} B above ${unguarded}`;
      return [
        {
          goal: `${what}: guard CPU <= ${GOAL_GUARD_US} µs/request above its floor`,
          met: us <= GOAL_GUARD_US,
          detail: `${us} µs${also} (each of the ${PROCESSES} processes: ${perProcess(name, floor)} µs)`,
        },
        {
          goal: `${what}: guard allocation <= ${GOAL_GUARD_BYTES} B/request above its floor`,
          met: allocated <= GOAL_GUARD_BYTES,
          detail: `${allocated} B${also}`,
        },
      ];
    };
    return {
      settings: {
        processes: PROCESSES,
        rounds: ROUNDS,
        requestsPerRound: perRound,
        store: 'answers at once',
        clock: 'process CPU time (user + system)',
      },
      rows: VARIANTS.map(([name, , , twin], i) => ({
        ...row(name, twin),
        ...(i === 0 ? { baseline: true } : {}),
      })),
      goals: [
        ...goal(
          'tRPC atomic',
          'tRPC + plugin, atomic mode',
          'tRPC + a no-op plugin',
          'tRPC unguarded',
        ),
        ...goal(
          'fetch atomic',
          'fetch + handle, atomic, completed with the stored form',
          'fetch unguarded',
          'fetch unguarded',
        ),
      ],
      notes: [
        `One request at a time in ${PROCESSES} fresh processes one after another (no HTTP; each figure the median of theirs), over a store that answers every call at once as for a new key: ` +
          '`ops/s` is 1 / CPU time per request, and `guard µs/request` the JavaScript the library adds. ' +
          'On top of it a guarded request pays its statements: the key INSERT in the batch (atomic), the reservation ' +
          'round trip and commit plus the completion UPDATE (leased).',
        'A tRPC plugin cannot cost less than `tRPC + a no-op plugin` (a `.concat()` middleware that only calls `next()`): ' +
          `tRPC's own middleware level, ${guard('tRPC + a no-op plugin', 'tRPC unguarded')} µs and ` +
          `${guardBytes('tRPC + a no-op plugin', 'tRPC unguarded')} B. The guard above it: atomic ` +
          `${guard('tRPC + plugin, atomic mode', 'tRPC + a no-op plugin')} µs and ` +
          `${guardBytes('tRPC + plugin, atomic mode', 'tRPC + a no-op plugin')} B, leased ` +
          `${guard('tRPC + plugin, leased mode', 'tRPC + a no-op plugin')} µs and ` +
          `${guardBytes('tRPC + plugin, leased mode', 'tRPC + a no-op plugin')} B.`,
        "CPU time is the process's own (`process.cpuUsage`, user + system, so garbage collection on V8's helper " +
          "threads counts too), not wall time: on a loaded machine wall time measures the other processes' share. " +
          'Minimum of the rounds, not the median: interference only ever adds time, so the fastest round is the ' +
          "closest to the code's own cost. Useful to compare commits on one machine; not a throughput figure.",
        `Allocation: V8's sampling heap profiler (one sample per ${SAMPLING_INTERVAL_BYTES} B allocated, freed objects kept) over ` +
          `${perRound / 2} requests per variant after the timed rounds; \`guard bytes/request\` is the difference to the ` +
          'unguarded twin. JavaScript heap only: body bytes held outside it (ArrayBuffer backing stores) are not counted.',
      ],
    };
  },
};

/**
 * The scenario's variants, each as its name and one request sent and its response read (a new
 * key each time). Also what `bench/src/profile/guard-profile.ts` profiles.
 */
export function guardCpuVariants(): [name: string, send: () => Promise<void>][] {
  const handlers = guardedHandlers();
  let n = 0;
  return VARIANTS.map(([name, handler, route]) => [
    name,
    async () => {
      const response = await handlers[handler](
        new Request(`http://bench/${route}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': `cpu_${n++}` },
          body: PAY_BODY,
        }),
      );
      if (response.status >= 300) throw new Error(`${route}: ${response.status}`);
      await response.arrayBuffer();
    },
  ]);
}

/** Each variant's median over the processes' figures. */
function medianPerVariant(figures: readonly Record<string, number>[]): Map<string, number> {
  return new Map(
    Object.keys(figures[0]!).map((name) => [
      name,
      median(figures.map((f) => f[name]!).sort((a, b) => a - b)),
    ]),
  );
}

/** What one measuring process found per variant: minimum CPU µs per request, bytes per request. */
interface Measured {
  cpuUs: Record<string, number>;
  bytes: Record<string, number>;
}

/**
 * Measure in a process of its own (this file run as a script): the bench process holds every
 * latency sample of the run by the time this scenario runs, and collecting that heap lands on
 * whichever variant is running.
 */
async function measureInFreshProcess(perRound: number): Promise<Measured> {
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), String(perRound)],
    { maxBuffer: 1024 * 1024 },
  );
  return JSON.parse(stdout) as Measured;
}

/** Interleaved rounds of every variant (minimum CPU per request), then each one's bytes. */
async function measure(perRound: number): Promise<Measured> {
  const variants = guardCpuVariants();
  const cpuUs: Record<string, number> = {};
  for (const [, send] of variants) await cpuEach(send, 500);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, send] of variants) {
      const us = await cpuEach(send, perRound);
      cpuUs[name] = Math.min(cpuUs[name] ?? Number.POSITIVE_INFINITY, us);
    }
  }
  const bytes: Record<string, number> = {};
  for (const [name, send] of variants) bytes[name] = await allocatedBytesPerRun(send, perRound / 2);
  return { cpuUs, bytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await measure(Number(process.argv[2]))));
}

/** Process CPU time of `op` run `count` times one after another; microseconds per run. */
export async function cpuEach(op: () => Promise<void>, count: number): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < count; i++) await op();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / count;
}

/** The bench server's tRPC procedures and fetch routes without the database, guarded as there. */
function guardedHandlers() {
  const idempotency = createIdempotency<undefined>({ store: answeringStore });
  const respond = async (complete: (result: BenchPayResult) => Promise<void>) => {
    await complete(RESULT);
    return RESULT;
  };

  const { t, idempotent } = benchTrpc(idempotency);
  const guarded = (mode: 'atomic' | 'leased') =>
    t.procedure
      .meta({ idempotency: { operation: `bench.cpu.${mode}`, mode } })
      .concat(idempotent)
      .input(parsePayInput)
      .mutation(({ ctx }) => respond((result) => ctx.idempotency.complete(undefined, result)));
  // The least any plugin costs: one `.concat()` middleware level that only calls `next()`.
  const noopPlugin = initTRPC
    .context<object>()
    .create()
    .procedure.use(({ next }) => next());
  const router = t.router({
    plain: t.procedure.input(parsePayInput).mutation(() => respond(async () => {})),
    noop: t.procedure
      .concat(noopPlugin)
      .input(parsePayInput)
      .mutation(() => respond(async () => {})),
    atomic: guarded('atomic'),
    leased: guarded('leased'),
  });
  const trpc = trpcFetchHandler(router, '');

  const http = fetchIdempotency(idempotency);
  const policies = { atomic: { mode: 'atomic' }, leased: { mode: 'leased' } } as const;
  const fetch = async (request: Request): Promise<Response> => {
    const input = parsePayInput(await request.json());
    const route = new URL(request.url).pathname.slice(1);
    if (route === 'plain') return Response.json(await respond(async () => {}), { status: 201 });
    const stored = route === 'atomic-stored';
    const mode = stored ? 'atomic' : (route as 'atomic' | 'leased');
    return http.handle(
      request,
      {
        tenantId: BENCH_TENANT,
        operation: `bench.cpu.rest.${route}`,
        fingerprintInput: input,
        policy: policies[mode],
      },
      async (exec) => {
        let response: Response | undefined;
        await respond(async (result) => {
          if (!stored) {
            response = Response.json(result, { status: 201 });
            return exec.complete(undefined, response);
          }
          // The reading-nothing form, as the bench's and the apps' fetch routes complete.
          const answer = storedJson(result, { status: 201 });
          await exec.complete(undefined, answer);
          response = responseOf(answer);
        });
        return response!;
      },
    );
  };
  return { trpc, fetch };
}
