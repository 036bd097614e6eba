import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ledgerChargesFor, waitForTerminal } from '@once/worker/testing';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { startTestSystem, type TestSystem } from './support/test-system.ts';

const WEBHOOK_SECRET = 'whsec_test_skewed_clock';
/** The web host's clock runs 10 minutes ahead of the processor's: beyond the 300 s tolerance. */
const SKEW_MS = 10 * 60_000;

/**
 * Webhooks are a shortcut, never the path a payment depends on: with every delivery refused
 * for clock skew, the worker still charges through the real processor and settles the payment
 * from the processor's answer.
 */
describe('webhooks refused for clock skew: the worker still settles the payment', () => {
  let system: TestSystem;
  let log: MockInstance<typeof console.log>;

  beforeAll(async () => {
    log = vi.spyOn(console, 'log');
    system = await startTestSystem({
      label: 'webhook_skew_system',
      webhookSecret: WEBHOOK_SECRET,
      webClock: { now: () => new Date(Date.now() + SKEW_MS) },
    });
    await system.startWorker('w-webhook-skew');
  }, 120_000);

  afterAll(async () => {
    await system?.close();
    log?.mockRestore();
  });

  it('refuses every delivery with a skew log line, and the payment still ends succeeded, charged once', async () => {
    const response = await fetch(`${system.web.url}/api/v1/payments`, {
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

    const statuses = await waitForTerminal(system.app.client.sql, [paymentId], 60_000);
    expect(statuses.get(paymentId)).toBe('succeeded');
    expect(await ledgerChargesFor(system.processorSql, paymentId)).toBe(1);

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
    const [applied] = await system.app.client.sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where operation = 'webhooks.processor'`;
    expect(applied!.n).toBe(0);
  }, 120_000);
});
