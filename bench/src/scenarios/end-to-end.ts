import { randomUUID } from 'node:crypto';
import { findFreePort } from '@once/postgres';
import postgres from 'postgres';
import { startBenchServer } from '../harness/bench-server.ts';
import type { ResultRow } from '../harness/result-types.ts';
import type { Scenario, ScenarioOutcome } from '../harness/scenario.ts';
import { type ChildHandle, startNodeProcess } from '../harness/server-process.ts';
import { round, summarize } from '../harness/stats.ts';

const PAY_INPUT = JSON.stringify({ lines: [{ productId: 'book_sre', quantity: 1 }] });
const WEBHOOK_SECRET = 'whsec_once_demo';
/** The processor refuses to start without an admin token; the bench never calls its admin API. */
const PROCESSOR_ADMIN_TOKEN = 'once-bench-admin';

interface Probe {
  paymentId: string;
  /** Wall-clock ms (sub-ms precision) when checkout.pay's response arrived. */
  returnedAt: number;
  payMs: number;
}

const wallNow = () => performance.timeOrigin + performance.now();

/** Sends checkout.pay at a steady rate (an open loop: the rate does not slow when answers do). */
async function payAtRate(url: string, perSecond: number, seconds: number): Promise<Probe[]> {
  const probes: Promise<Probe | undefined>[] = [];
  const total = Math.round(perSecond * seconds);
  for (let i = 0; i < total; i++) {
    probes.push(
      (async () => {
        const sent = wallNow();
        const response = await fetch(`${url}/api/trpc/checkout.pay`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer once_test_tenant_a',
            'idempotency-key': randomUUID(),
          },
          body: PAY_INPUT,
        });
        const returnedAt = wallNow();
        const body = (await response.json()) as { result?: { data?: { paymentId?: string } } };
        const paymentId = body.result?.data?.paymentId;
        return paymentId ? { paymentId, returnedAt, payMs: returnedAt - sent } : undefined;
      })().catch(() => undefined),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000 / perSecond));
  }
  return (await Promise.all(probes)).filter((p): p is Probe => p !== undefined);
}

/**
 * 6. End to end: from `checkout.pay` returning to the payment charged at the real processor
 * and recorded by the real worker (its `updated_at`), with 1 and then 2 workers.
 */
export const endToEnd: Scenario = {
  name: 'e2e',
  title: '6. End to end: checkout.pay returned -> charged and recorded by a worker',
  async run(ctx): Promise<ScenarioOutcome> {
    const perSecond = ctx.args.quick ? 10 : 20;
    const processorDatabaseUrl = await ctx.pg.createDatabase('once_bench_processor');
    const server = await startBenchServer({ databaseUrl: ctx.pg.url });
    const sql = postgres(ctx.pg.url, { max: 1, onnotice: () => {} });
    const children: ChildHandle[] = [];
    try {
      // Retire earlier scenarios' synthetic payments: the workers start with an empty queue.
      await sql`update outbox_jobs set status = 'done', updated_at = now() where status in ('pending', 'running')`;
      await sql`update payments set status = 'failed', failure_code = 'bench_synthetic', updated_at = now()
                where status in ('processing', 'unknown')`;
      const processorPort = await findFreePort();
      const processorUrl = `http://127.0.0.1:${processorPort}`;
      children.push(
        await startNodeProcess({
          name: 'processor',
          script: 'apps/processor/src/main.ts',
          env: {
            PORT: String(processorPort),
            PROCESSOR_DATABASE_URL: processorDatabaseUrl,
            PROCESSOR_WEBHOOK_URL: `${server.url}/webhooks/sink`,
            PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
            PROCESSOR_ADMIN_TOKEN,
          },
          ready: `${processorUrl}/healthz`,
        }),
      );
      const startWorker = async (index: number) => {
        const healthPort = await findFreePort();
        children.push(
          await startNodeProcess({
            name: `worker-${index}`,
            script: 'apps/worker/src/runtime/main.ts',
            env: {
              DATABASE_URL: ctx.pg.url,
              PROCESSOR_URL: processorUrl,
              PROCESSOR_DATABASE_URL: processorDatabaseUrl,
              WORKER_HEALTH_PORT: String(healthPort),
              WORKER_ID: `bench-worker-${index}`,
            },
            ready: `http://127.0.0.1:${healthPort}/healthz`,
          }),
        );
      };

      const measure = async (workers: number): Promise<ResultRow> => {
        await payAtRate(server.url, perSecond, ctx.warmupSec);
        const started = performance.now();
        const probes = await payAtRate(server.url, perSecond, ctx.measureSec);
        const ids = probes.map((p) => p.paymentId);
        const deadline = Date.now() + 60_000;
        let rows: { id: string; status: string; updated_ms: number }[] = [];
        for (;;) {
          rows = await sql<{ id: string; status: string; updated_ms: number }[]>`
            select id, status, extract(epoch from updated_at)::float8 * 1000 as updated_ms
            from payments where id in ${sql(ids)}`;
          if (rows.every((r) => r.status !== 'processing') || Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        const elapsed = (performance.now() - started) / 1000;
        const returnedAt = new Map(probes.map((p) => [p.paymentId, p.returnedAt]));
        const settled = rows.filter((r) => r.status !== 'processing');
        const latencies = settled.map((r) => Math.max(0, r.updated_ms - returnedAt.get(r.id)!));
        const statuses: Record<string, number> = {};
        for (const r of rows) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        return {
          name: `${workers} worker${workers > 1 ? 's' : ''}`,
          throughput: settled.length / elapsed,
          latency: summarize(latencies),
          extra: {
            payments: probes.length,
            'payment states': Object.entries(statuses)
              .map(([s, n]) => `${s}:${n}`)
              .join(' '),
            'checkout.pay median ms': round(summarize(probes.map((p) => p.payMs)).median),
          },
        };
      };

      await startWorker(1);
      const one = { ...(await measure(1)), baseline: true };
      await startWorker(2);
      const two = await measure(2);
      return {
        settings: {
          paymentsPerSecond: perSecond,
          measureSec: ctx.measureSec,
          workerConcurrency: 4,
        },
        rows: [one, two],
        goals: [],
        notes: [
          "Latency = the worker's recording transaction time (payments.updated_at, Postgres clock) minus the moment " +
            "this process received checkout.pay's response (same machine, same clock). It includes the NOTIFY wake-up, " +
            'the claim (FOR UPDATE SKIP LOCKED), the charge over HTTP through the stripe SDK to the mock processor ' +
            '(which writes its own durable ledger and idempotency key), and the recording commit. ops/s is payments settled per second.',
          `Open-loop load at ${perSecond} payments/s, not a saturation test: the second worker should cut queueing ` +
            'delay, not the single-payment path.',
        ],
      };
    } finally {
      for (const child of children.reverse()) await child.stop();
      await sql.end({ timeout: 5 });
      await server.stop();
    }
  },
};
