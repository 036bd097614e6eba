import { randomUUID } from 'node:crypto';
import { createApiDependencies, createCaller, createContext } from '@once/api';
import { createHttpProcessorLedger } from '@once/api/processor-ledger';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForTerminal } from '../test-support/convergence.ts';
import { type RunningProcess, startWorkerProcess } from '../test-support/processes.ts';
import { type ProcessorUnderTest, startProcessorUnderTest } from '../test-support/processor.ts';

// Real parts: `checkout.pay` through the tRPC caller, a worker process, the mock processor
// process; the timeline is read back through `ops.paymentTimeline` as the cockpit reads it.
let app: TestDatabase;
let processor: ProcessorUnderTest;
let worker: RunningProcess;
let deps: ReturnType<typeof createApiDependencies>;

function storyOf(events: { actor: string; kind: string; detail: Record<string, unknown> }[]) {
  return events.map((event) => {
    const d = event.detail;
    switch (event.kind) {
      case 'pay.attempt':
        return `${event.actor} attempt replayed=${d.replayed}`;
      case 'job.claimed':
        return `${event.actor} claim ${d.attempt}`;
      case 'processor.call':
        return `call ${d.call} ${d.result}${d.status ? ` ${d.status}` : ''}`;
      case 'outcome.recorded':
        return `recorded ${(d.outcome as { kind: string }).kind} -> ${d.jobNow}`;
      case 'job.finished':
        return `${event.actor} finished ${d.attempt}: already ${d.paymentWas}`;
      default:
        return event.kind;
    }
  });
}

function caller(headers: Record<string, string>) {
  const req = new Request('http://localhost/api/trpc', { headers });
  return createCaller(createContext({ req, resHeaders: new Headers(), ...deps }));
}
const merchant = { authorization: 'Bearer once_test_tenant_a' };

beforeAll(async () => {
  app = await createTestDatabase('worker_timeline');
  await seedDemoData(app.client.db);
  processor = await startProcessorUnderTest('worker_timeline_processor');
  deps = createApiDependencies({
    db: app.client.db,
    sessionSecret: 'test-session-secret-0123456789',
    processorLedger: createHttpProcessorLedger({ url: processor.url, adminToken: 'once-admin' }),
  });
  worker = await startWorkerProcess(
    { DATABASE_URL: app.url, PROCESSOR_URL: processor.url },
    'w-timeline',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await processor?.close();
  await app?.drop();
});

describe('the life of a payment, recorded as it happens', () => {
  it('tells a charge whose answer was lost in order: attempt, claim, intent, failed confirm, retry finds it charged, recorded, replayed retry', async () => {
    // The confirm (step B) charges, then answers 500: the worker cannot know it charged.
    await processor.armFault({ kind: 'fail_after_charge', operation: 'payment_intents.confirm' });
    const key = randomUUID();
    const paid = await caller({ ...merchant, 'idempotency-key': key }).checkout.pay({
      lines: [{ productId: 'book_sre', quantity: 1 }],
    });
    const statuses = await waitForTerminal(app.client.sql, [paid.paymentId]);
    expect(statuses.get(paid.paymentId)).toBe('succeeded');
    // A retry of the same intent afterwards (a reload): answered as a replay, recorded as one.
    // (Sent while the worker runs, it lands anywhere in between: that is concurrency.)
    await caller({ ...merchant, 'idempotency-key': key }).checkout.pay({
      lines: [{ productId: 'book_sre', quantity: 1 }],
    });

    const timeline = await caller(merchant).ops.paymentTimeline({ paymentId: paid.paymentId });
    const story = storyOf(timeline.events);
    const lostAnswer = [
      'browser attempt replayed=false',
      'payment.committed',
      'worker:w-timeline claim 1',
      'call search ok',
      'call create ok requires_confirmation',
      'intent.recorded',
      'call confirm failed',
      'recorded ambiguous -> retry_scheduled',
    ];
    // The worker's webhook backfill runs once at its start; on a slow machine that pass can
    // list the succeeded event between the failed confirm and the retry. Then the webhook
    // settles the payment and the retry finds it settled: the other of the two right stories.
    const retryFindsCharge = [
      'worker:w-timeline claim 2',
      'call retrieve ok succeeded',
      'recorded succeeded -> done',
    ];
    const webhookFirst = [
      'webhook.applied',
      'worker:w-timeline claim 2',
      'worker:w-timeline finished 2: already succeeded',
    ];
    expect([
      [...lostAnswer, ...retryFindsCharge, 'browser attempt replayed=true'],
      [...lostAnswer, ...webhookFirst, 'browser attempt replayed=true'],
    ]).toContainEqual(story);
    // Every processor call names the downstream key it carried.
    const calls = timeline.events.filter((event) => event.kind === 'processor.call');
    expect(calls.find((c) => c.detail.call === 'create')?.detail.key).toBe(
      timeline.payment.downstreamKey,
    );
    expect(calls.find((c) => c.detail.call === 'confirm')?.detail.key).toBe(
      `${timeline.payment.downstreamKey}:confirm`,
    );
    // Sequence and time agree: the picture's order is the order things happened in.
    const times = timeline.events.map((event) => Date.parse(event.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(timeline.ledger).toMatchObject({ processor: 'reachable', verdict: 'agrees' });
    expect(timeline.ledger.side?.chargeCount).toBe(1);
  });

  it('shows a confirm whose connection dropped after charging as replayed by the processor, charged once', async () => {
    // The SDK re-sends a request whose connection dropped; the processor answers the re-sent
    // confirm from its idempotency store: the timeline shows that replay, not a second charge.
    await processor.armFault({ kind: 'charge_then_drop', operation: 'payment_intents.confirm' });
    const paid = await caller({ ...merchant, 'idempotency-key': randomUUID() }).checkout.pay({
      lines: [{ productId: 'bookmark', quantity: 2 }],
    });
    await waitForTerminal(app.client.sql, [paid.paymentId]);
    const timeline = await caller(merchant).ops.paymentTimeline({ paymentId: paid.paymentId });
    expect(storyOf(timeline.events)).toEqual([
      'browser attempt replayed=false',
      'payment.committed',
      'worker:w-timeline claim 1',
      'call search ok',
      'call create ok requires_confirmation',
      'intent.recorded',
      'call confirm replayed succeeded',
      'recorded succeeded -> done',
    ]);
    expect(timeline.ledger).toMatchObject({ verdict: 'agrees', side: { chargeCount: 1 } });
  });

  it('shows a job that found its payment already settled (a webhook overtook the retry) as finished, not left claimed', async () => {
    const paid = await caller({ ...merchant, 'idempotency-key': randomUUID() }).checkout.pay({
      lines: [{ productId: 'bookmark', quantity: 1 }],
    });
    await waitForTerminal(app.client.sql, [paid.paymentId]);
    // A second job for the settled payment, as a retry that lost the race to the webhook.
    const jobId = `job_late_${randomUUID().replaceAll('-', '')}`;
    await app.client.sql`
      insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload)
      select tenant_id, ${jobId}, 'charge_payment', id, downstream_key, '{}'::jsonb
      from payments where id = ${paid.paymentId}`;
    let status = '';
    for (let i = 0; i < 100 && status !== 'done'; i++) {
      const [job] = await app.client.sql<{ status: string }[]>`
        select status from outbox_jobs where id = ${jobId}`;
      status = job?.status ?? '';
      if (status !== 'done') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('done');
    const timeline = await caller(merchant).ops.paymentTimeline({ paymentId: paid.paymentId });
    expect(storyOf(timeline.events).slice(-2)).toEqual([
      'worker:w-timeline claim 1',
      'worker:w-timeline finished 1: already succeeded',
    ]);
  });
});
