import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type SpawnedProcessor,
  spawnProcessor,
} from '@once/processor/testing';
import {
  type ServedHandler,
  serveFetch,
  startWebRuntime,
  type WebRuntime,
  webApiRoutes,
} from '@once/web/testing';
import {
  ledgerChargesFor,
  type RunningProcess,
  startWorkerProcess,
  waitForTerminal,
} from '@once/worker/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';

const WEBHOOK_SECRET = 'whsec_test_skewed_clock';
/** The web host's clock runs 10 minutes ahead of the processor's: beyond the 300 s tolerance. */
const SKEW_MS = 10 * 60_000;

/**
 * Webhooks are a shortcut, never the path a payment depends on: with every delivery refused
 * for clock skew, the worker still charges through the real processor and settles the payment
 * from the processor's answer.
 */
describe('webhooks refused for clock skew: the worker still settles the payment', () => {
  let app: TestDatabase;
  let runtime: WebRuntime;
  let web: ServedHandler;
  let processorDb: ProcessorTestDatabase;
  let processorSql: postgres.Sql;
  let processor: SpawnedProcessor;
  let worker: RunningProcess;
  let log: MockInstance<typeof console.log>;

  beforeAll(async () => {
    log = vi.spyOn(console, 'log');
    app = await createTestDatabase('webhook_skew_system');
    runtime = await startWebRuntime({
      DATABASE_URL: app.url,
      SESSION_SECRET: 'webhook-skew-session-secret-0123',
      PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
    });
    const skewedClock = { now: () => new Date(Date.now() + SKEW_MS) };
    const skewed: WebRuntime = { ...runtime, deps: { ...runtime.deps, clock: skewedClock } };
    web = await serveFetch(webApiRoutes(async () => skewed));
    processorDb = await createProcessorTestDatabase('webhook_skew_processor');
    processorSql = postgres(processorDb.url, { max: 2, onnotice: () => {} });
    processor = await spawnProcessor({
      PROCESSOR_DATABASE_URL: processorDb.url,
      PROCESSOR_WEBHOOK_URL: `${web.url}/api/webhooks/processor`,
      PROCESSOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
      PROCESSOR_WEBHOOK_BACKOFF_MS: '100',
    });
    worker = await startWorkerProcess(
      { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
      'w-webhook-skew',
    );
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await processor?.stop();
    await processorSql?.end();
    await processorDb?.drop();
    await web?.close();
    await runtime?.client.close();
    await app?.drop();
    log?.mockRestore();
  });

  it('refuses every delivery with a skew log line, and the payment still ends succeeded, charged once', async () => {
    const response = await fetch(`${web.url}/api/v1/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer once_test_tenant_a',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ lines: [{ productId: 'book_sre', quantity: 1 }] }),
    });
    expect(response.status).toBe(201);
    const { paymentId } = (await response.json()) as { paymentId: string };

    const statuses = await waitForTerminal(app.client.sql, [paymentId], 60_000);
    expect(statuses.get(paymentId)).toBe('succeeded');
    expect(await ledgerChargesFor(processorSql, paymentId)).toBe(1);

    // The processor did deliver, and every delivery was refused with the measured skew.
    const refusals = async () =>
      log.mock.calls.map((call) => String(call[0])).filter((l) => l.startsWith('web: webhook'));
    const deadline = Date.now() + 20_000;
    while ((await refusals()).length === 0 && Date.now() < deadline) await sleep(100);
    const lines = await refusals();
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).toMatch(
        /^web: webhook refused: timestamp outside the tolerance; signed 60\d s before this host's clock \(tolerance 300 s, ONCE_WEBHOOK_TOLERANCE_SECONDS\)/,
      );
    }
    const [applied] = await app.client.sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where operation = 'webhooks.processor'`;
    expect(applied!.n).toBe(0);
  }, 120_000);
});
