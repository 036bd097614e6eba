import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { PaymentStatus } from '@once/db/schema';
import { findFreePort } from '@once/postgres';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type SpawnedProcessor,
  spawnProcessor,
} from '@once/processor/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createContext } from '../../context.ts';
import { createApiDependencies } from '../../dependencies.ts';
import { createHttpProcessorLedger } from '../../processor/http-processor-admin.ts';
import {
  type LedgerCharge,
  type ProcessorLedger,
  ProcessorUnreachableError,
} from '../../processor/processor-admin.ts';
import { createCaller } from '../../root.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import {
  type AppPaymentFacts,
  chargesOfPayment,
  judgeLedgerVerdict,
  summariseCharges,
} from './ledger-verdict.ts';

const statuses: PaymentStatus[] = ['processing', 'succeeded', 'declined', 'unknown', 'failed'];

function facts(overrides: Partial<AppPaymentFacts> = {}): AppPaymentFacts {
  return {
    tenantId: 'tenant_a',
    id: 'pay_1',
    status: 'succeeded',
    amount: 2599,
    currency: 'usd',
    downstreamKey: 'once_pay_pay_1',
    processorPaymentIntentId: 'pi_1',
    ...overrides,
  };
}

function charge(overrides: Partial<LedgerCharge> = {}): LedgerCharge {
  return {
    seq: 1,
    paymentIntentId: 'pi_1',
    chargeId: 'ch_1',
    amount: 2599,
    currency: 'usd',
    idempotencyKey: 'once_pay_pay_1',
    metadata: { payment_id: 'pay_1', tenant_id: 'tenant_a' },
    createdAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe('judgeLedgerVerdict', () => {
  const verdictOf = (payment: AppPaymentFacts, charges: LedgerCharge[]) =>
    judgeLedgerVerdict(payment, summariseCharges(chargesOfPayment(payment, charges))).verdict;

  it.each([
    ['succeeded', 1, 'agrees'],
    ['declined', 0, 'agrees'],
    ['failed', 0, 'agrees'],
    ['processing', 0, 'not_charged'],
    ['unknown', 0, 'not_charged'],
    ['processing', 1, 'app_behind'],
    ['unknown', 1, 'app_behind'],
    ['declined', 1, 'charged_but_app_declined_or_failed'],
    ['failed', 1, 'charged_but_app_declined_or_failed'],
    ['succeeded', 0, 'succeeded_without_charge'],
    ['succeeded', 2, 'double_charge'],
    ['declined', 2, 'double_charge'],
    ['requires_action', 0, 'not_charged'],
    ['requires_action', 1, 'app_behind'],
    ['canceled', 0, 'agrees'],
    ['canceled', 1, 'charged_but_app_declined_or_failed'],
  ] as const)('app %s with %i charge(s) -> %s', (status, count, expected) => {
    const charges = Array.from({ length: count }, (_, i) =>
      charge({ seq: i + 1, paymentIntentId: `pi_${i + 1}`, idempotencyKey: `key_${i}` }),
    );
    expect(verdictOf(facts({ status }), charges)).toBe(expected);
  });

  it('matches a charge by downstream key even without metadata, and by metadata under another key', () => {
    const byKey = charge({ metadata: {} });
    const byMetadata = charge({ seq: 2, paymentIntentId: 'pi_2', idempotencyKey: 'manual_retry' });
    expect(chargesOfPayment(facts(), [byKey])).toHaveLength(1);
    expect(verdictOf(facts(), [byKey, byMetadata])).toBe('double_charge');
  });

  it('ignores charges of other payments and of another tenant with the same payment id', () => {
    const other = charge({ idempotencyKey: 'once_pay_pay_2', metadata: { payment_id: 'pay_2' } });
    const otherTenant = charge({
      idempotencyKey: 'once_pay_pay_1_b',
      metadata: { payment_id: 'pay_1', tenant_id: 'tenant_b' },
    });
    expect(chargesOfPayment(facts(), [other, otherTenant])).toEqual([]);
  });

  it('flags another PaymentIntent or another amount than the app recorded as a mismatch', () => {
    expect(verdictOf(facts({ processorPaymentIntentId: 'pi_other' }), [charge()])).toBe('mismatch');
    expect(verdictOf(facts({ amount: 100 }), [charge()])).toBe('mismatch');
  });

  it('never calls more than one charge anything but a double charge, nor agrees with money moved on a refusal', () => {
    fc.assert(
      fc.property(fc.constantFrom(...statuses), fc.integer({ min: 0, max: 4 }), (status, count) => {
        const charges = Array.from({ length: count }, (_, i) =>
          charge({ seq: i, paymentIntentId: `pi_${i}`, idempotencyKey: `k${i}` }),
        );
        const verdict = verdictOf(facts({ status, processorPaymentIntentId: null }), charges);
        if (count > 1) return verdict === 'double_charge';
        if (verdict === 'agrees') {
          return (
            (count === 1 && status === 'succeeded') ||
            (count === 0 && (status === 'declined' || status === 'failed'))
          );
        }
        return verdict !== 'double_charge';
      }),
    );
  });
});

/** A ledger the test controls: answers `charges`, or throws `failure`. */
function fakeLedger() {
  const state: { charges: LedgerCharge[]; failure: Error | null; asked: string[] } = {
    charges: [],
    failure: null,
    asked: [],
  };
  const ledger: ProcessorLedger = {
    async chargesOf(account) {
      state.asked.push(account);
      if (state.failure) throw state.failure;
      return state.charges;
    },
  };
  return { ledger, state };
}

describe('ops.ledger with a fake processor', () => {
  const fake = fakeLedger();
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_ops_ledger', { processorLedger: fake.ledger });
  });
  afterAll(async () => {
    await h.drop();
  });
  beforeEach(async () => {
    await h.database.client.sql`truncate payments, outbox_jobs, idempotency_keys`;
    fake.state.charges = [];
    fake.state.failure = null;
    fake.state.asked = [];
  });

  async function pay(tenant: 'tenant_a' | 'tenant_b' = 'tenant_a') {
    const { api } = h.caller({ ...bearer(tenant), 'idempotency-key': randomUUID() });
    const productId = tenant === 'tenant_a' ? 'book_sre' : 'mug';
    return api.checkout.pay({ lines: [{ productId, quantity: 1 }] });
  }

  it("asks for the tenant's own processor account and judges each of its payments", async () => {
    const charged = await pay();
    const pending = await pay();
    await pay('tenant_b');
    await h.database.client.sql`
      update payments set status = 'succeeded', processor_payment_intent_id = 'pi_a'
      where id = ${charged.paymentId}`;
    fake.state.charges = [
      charge({
        paymentIntentId: 'pi_a',
        amount: charged.amount,
        idempotencyKey: `once_pay_${charged.paymentId}`,
        metadata: { payment_id: charged.paymentId, tenant_id: 'tenant_a' },
      }),
    ];
    const result = await h.caller(bearer('tenant_a')).api.ops.ledger();
    expect(fake.state.asked).toEqual(['acct_tenant_a']);
    expect(result).toMatchObject({ processor: 'reachable', processorAccountId: 'acct_tenant_a' });
    expect(result.rows.map((r) => [r.paymentId, r.verdict])).toEqual([
      [pending.paymentId, 'not_charged'],
      [charged.paymentId, 'agrees'],
    ]);
    expect(result.rows[1]?.processor).toEqual({
      chargeCount: 1,
      chargedAmount: charged.amount,
      currency: 'usd',
      paymentIntentId: 'pi_a',
      paymentIntentIds: ['pi_a'],
    });
  });

  it('answers the app side with processor unreachable instead of failing', async () => {
    const payment = await pay();
    fake.state.failure = new ProcessorUnreachableError(
      'processor ledger not reachable (ECONNREFUSED)',
    );
    const result = await h.caller(bearer('tenant_a')).api.ops.ledger({ limit: 10 });
    expect(result.processor).toBe('unreachable');
    expect(result.processorError).toContain('ECONNREFUSED');
    expect(result.rows).toEqual([
      expect.objectContaining({
        paymentId: payment.paymentId,
        appStatus: 'processing',
        processor: null,
        verdict: 'unverified',
      }),
    ]);
  });

  it('lets other errors fail the query (a bug must not look like an outage)', async () => {
    await pay();
    fake.state.failure = new TypeError('bug');
    await expect(h.caller(bearer('tenant_a')).api.ops.ledger()).rejects.toThrow('bug');
  });

  it('refuses an unauthenticated caller', async () => {
    await expect(h.caller().api.ops.ledger()).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });
});

describe('the HTTP processor ledger client', () => {
  it('reports a closed port as unreachable', async () => {
    const port = await findFreePort();
    const ledger = createHttpProcessorLedger({
      url: `http://127.0.0.1:${port}`,
      adminToken: 'once-admin',
    });
    await expect(ledger.chargesOf('acct_tenant_a')).rejects.toBeInstanceOf(
      ProcessorUnreachableError,
    );
  });

  it('gives up on a processor that accepts the connection but never answers', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server: Server = createServer(() => {
      // Never answers.
    });
    server.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const ledger = createHttpProcessorLedger({
        url: `http://127.0.0.1:${port}`,
        adminToken: 'once-admin',
        timeoutMs: 300,
      });
      const error = await ledger.chargesOf('acct_tenant_a').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProcessorUnreachableError);
      expect(String((error as Error).message)).toMatch(/TimeoutError|abort/i);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('ops.ledger against the real processor process', () => {
  let h: ApiTestHarness;
  let processor: SpawnedProcessor;
  let processorDb: ProcessorTestDatabase;

  beforeAll(async () => {
    h = await createApiTestHarness('api_ops_ledger_real');
    processorDb = await createProcessorTestDatabase('api_ledger');
    // Only the process is used, never its code: the API talks to it as to a third party.
    processor = await spawnProcessor({
      PROCESSOR_DATABASE_URL: processorDb.url,
      // Nobody listens there: deliveries fail and are retried, which this test ignores.
      PROCESSOR_WEBHOOK_URL: 'http://127.0.0.1:9/webhooks',
      PROCESSOR_ADMIN_TOKEN: 'once-admin',
    });
    // The web app's wiring: the ledger client comes from PROCESSOR_URL + PROCESSOR_ADMIN_TOKEN.
    h = {
      ...h,
      ...rebuildWithEnv(h, { PROCESSOR_URL: processor.url, PROCESSOR_ADMIN_TOKEN: 'once-admin' }),
    };
  }, 90_000);
  afterAll(async () => {
    expect(await processor?.stop()).toBe(0);
    await processorDb?.drop();
    await h?.drop();
  });

  /** Charges at the processor the way the worker does: its SDK's form body, key and metadata. */
  async function chargeAtProcessor(
    payment: { paymentId: string; amount: number },
    idempotencyKey: string,
  ): Promise<string> {
    const body = new URLSearchParams({
      amount: String(payment.amount),
      currency: 'usd',
      confirm: 'true',
      payment_method: 'pm_card_visa',
      'metadata[payment_id]': payment.paymentId,
      'metadata[tenant_id]': 'tenant_a',
    });
    const response = await fetch(`${processor.url}/v1/payment_intents`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_tenant_a',
        'content-type': 'application/x-www-form-urlencoded',
        'idempotency-key': idempotencyKey,
      },
      body,
    });
    expect(response.status).toBe(200);
    const intent = (await response.json()) as { id: string; status: string };
    expect(intent.status).toBe('succeeded');
    return intent.id;
  }

  it('shows agrees, app_behind, double_charge and not_charged from the real ledger', async () => {
    const pay = () =>
      h
        .caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() })
        .api.checkout.pay({ lines: [{ productId: 'book_sre', quantity: 1 }] });
    const agreed = await pay();
    const behind = await pay();
    const doubled = await pay();
    const untouched = await pay();

    const agreedIntent = await chargeAtProcessor(agreed, `once_pay_${agreed.paymentId}`);
    // A retry with the same downstream key is replayed by the processor: still one charge.
    expect(await chargeAtProcessor(agreed, `once_pay_${agreed.paymentId}`)).toBe(agreedIntent);
    await h.database.client.sql`
      update payments set status = 'succeeded', processor_payment_intent_id = ${agreedIntent}
      where id = ${agreed.paymentId}`;
    const behindIntent = await chargeAtProcessor(behind, `once_pay_${behind.paymentId}`);
    await chargeAtProcessor(doubled, `once_pay_${doubled.paymentId}`);
    // A second charge under another key (the bug the comparison exists to catch).
    await chargeAtProcessor(doubled, `manual_${doubled.paymentId}`);

    const result = await h.caller(bearer('tenant_a')).api.ops.ledger();
    expect(result.processor).toBe('reachable');
    const byId = new Map(result.rows.map((row) => [row.paymentId, row]));
    expect(byId.get(agreed.paymentId)).toMatchObject({
      verdict: 'agrees',
      processor: { chargeCount: 1, paymentIntentId: agreedIntent, chargedAmount: agreed.amount },
    });
    expect(byId.get(behind.paymentId)).toMatchObject({
      verdict: 'app_behind',
      processor: { chargeCount: 1, paymentIntentId: behindIntent },
    });
    expect(byId.get(doubled.paymentId)).toMatchObject({
      verdict: 'double_charge',
      processor: { chargeCount: 2, chargedAmount: 2 * doubled.amount },
    });
    expect(byId.get(untouched.paymentId)).toMatchObject({
      verdict: 'not_charged',
      processor: { chargeCount: 0 },
    });
    // tenant_b's account holds none of tenant_a's charges.
    const other = await h.caller(bearer('tenant_b')).api.ops.ledger();
    expect(other).toMatchObject({ processor: 'reachable', processorAccountId: 'acct_tenant_b' });
    expect(other.rows).toEqual([]);
  });

  it('answers the app side when PROCESSOR_URL points at nothing (real connection refused)', async () => {
    const closed = rebuildWithEnv(h, {
      PROCESSOR_URL: `http://127.0.0.1:${await findFreePort()}`,
      PROCESSOR_ADMIN_TOKEN: 'once-admin',
    });
    const result = await closed.caller(bearer('tenant_a')).api.ops.ledger();
    expect(result.processor).toBe('unreachable');
    expect(result.rows.length).toBeGreaterThan(0);
    expect(result.rows.every((row) => row.verdict === 'unverified' && row.processor === null)).toBe(
      true,
    );
  });

  it('refuses a wrong admin token as unreachable, not as an empty ledger', async () => {
    const ledger = createHttpProcessorLedger({ url: processor.url, adminToken: 'wrong' });
    await expect(ledger.chargesOf('acct_tenant_a')).rejects.toThrow(/answered 401/);
  });
});

/** The harness's caller over dependencies built from `env`, like the web app builds them. */
function rebuildWithEnv(
  h: ApiTestHarness,
  env: Record<string, string>,
): Pick<ApiTestHarness, 'deps' | 'caller'> {
  const deps = createApiDependencies({
    db: h.database.client.db,
    sessionSecret: h.deps.sessionSecret,
    env,
  });
  return {
    deps,
    caller(headers = {}) {
      const resHeaders = new Headers();
      const req = new Request('http://localhost/api/trpc', { headers });
      return { api: createCaller(createContext({ req, resHeaders, ...deps })), resHeaders };
    },
  };
}
