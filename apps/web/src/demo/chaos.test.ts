import { randomUUID } from 'node:crypto';
import { createApiDependencies, createContext } from '@once/api';
import { paymentEvents } from '@once/db/schema';
import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChaosSwitchboard,
  ChaosSwitchError,
  ChaosSwitchRateLimited,
  type LauncherSwitchName,
  type ProcessorFaultState,
  type ProcessorFaultSwitchName,
} from './chaos-switchboard.ts';
import { createWebRouter } from './web-router.ts';

interface ApiTestHarness {
  database: TestDatabase;
  /** A caller as an HTTP request with these headers would get; `resHeaders` shows what it set. */
  caller(headers?: Record<string, string>): {
    api: ReturnType<ReturnType<typeof createWebRouter>['createCaller']>;
    resHeaders: Headers;
  };
  drop(): Promise<void>;
}

/** A migrated, seeded database, the API's dependencies over it, and the web's router. */
async function createApiTestHarness(
  label: string,
  options: { chaos?: ChaosSwitchboard; operatorCode: string; clock?: { now(): Date } },
): Promise<ApiTestHarness> {
  const database = await createTestDatabase(label);
  await seedDemoData(database.client.db);
  const { chaos, ...rest } = options;
  const deps = createApiDependencies({
    db: database.client.db,
    sessionSecret: 'test-session-secret-0123456789',
    allowDemoLogin: true,
    ...rest,
  });
  const router = createWebRouter(chaos);
  return {
    database,
    caller(headers = {}) {
      const resHeaders = new Headers();
      const req = new Request('http://localhost/api/trpc', { headers });
      return { api: router.createCaller(createContext({ req, resHeaders, ...deps })), resHeaders };
    },
    drop: () => database.drop(),
  };
}

const bearer = (tenant: 'tenant_a' | 'tenant_b') => ({
  authorization: `Bearer once_test_${tenant}`,
});

/** The tRPC code and the stable `data.code` a refused call rejects with. */
async function refusal(call: Promise<unknown>): Promise<{ trpc: string; code: string }> {
  const error = await call.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
  if (!(error instanceof TRPCError)) throw error;
  const cause = error.cause as { code?: string } | undefined;
  return { trpc: error.code, code: cause?.code ?? error.code };
}

/** The deployment's operator code (ONCE_OPERATOR_CODE): a demo operator must give it. */
const OPERATOR_CODE = 'chaos-test-operator-code';

async function demoSession(
  h: ApiTestHarness,
  role: 'shopper' | 'operator',
  tenant: 'tenant_a' | 'tenant_b' = 'tenant_a',
): Promise<string> {
  const start = h.caller();
  await start.api.session.start({ demoTenantId: tenant, role, operatorCode: OPERATOR_CODE });
  return start.resHeaders.get('set-cookie')!.split(';')[0]!;
}

/** A switchboard that records what it was asked, instead of killing processes. */
function recordingSwitchboard() {
  const pressed: string[] = [];
  const faults: [string, ProcessorFaultSwitchName][] = [];
  const dropTokens: string[] = [];
  /** What the processor reports of its faults; the accounts it was asked about. */
  const faultStates: ProcessorFaultState[] = [];
  const faultAccounts: string[] = [];
  const board: ChaosSwitchboard = {
    parts: async () => [{ name: 'worker-1', state: 'up', pid: 42, restarts: 0 }],
    pressLauncherSwitch: async (name: LauncherSwitchName) => {
      pressed.push(name);
      return `${name} done`;
    },
    armProcessorFault: async (account, name) => {
      faults.push([account, name]);
      return `armed ${name}`;
    },
    processorFaults: async (account) => {
      faultAccounts.push(account);
      return faultStates;
    },
    armDropNextResponse: (token) => void dropTokens.push(token),
  };
  return { board, pressed, faults, dropTokens, faultStates, faultAccounts };
}

describe('chaos switches are absent unless the launcher enabled them', () => {
  let h: ApiTestHarness;
  beforeAll(async () => {
    h = await createApiTestHarness('api_chaos_disabled', { operatorCode: OPERATOR_CODE });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('an operator sees `enabled: false` and every press is refused with chaos_switches_disabled', async () => {
    const operator = await demoSession(h, 'operator');
    for (const headers of [{ cookie: operator }, bearer('tenant_a')]) {
      const api = h.caller(headers).api;
      expect(await api.ops.chaosStatus()).toEqual({ enabled: false });
      for (const name of ['kill_worker', 'drop_next_response', 'processor_delay'] as const) {
        expect(await refusal(api.ops.chaosPress({ switch: name }))).toEqual({
          trpc: 'NOT_FOUND',
          code: 'chaos_switches_disabled',
        });
      }
    }
  });
});

describe('chaos switches, enabled: operator only', () => {
  let h: ApiTestHarness;
  const recording = recordingSwitchboard();
  beforeAll(async () => {
    h = await createApiTestHarness('api_chaos_enabled', {
      chaos: recording.board,
      operatorCode: OPERATOR_CODE,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('a shopper (and nobody signed in) is refused before any switch is touched', async () => {
    const shopper = await demoSession(h, 'shopper');
    const api = h.caller({ cookie: shopper }).api;
    expect(await refusal(api.ops.chaosStatus())).toEqual({
      trpc: 'FORBIDDEN',
      code: 'operator_required',
    });
    expect(await refusal(api.ops.chaosPress({ switch: 'kill_worker' }))).toEqual({
      trpc: 'FORBIDDEN',
      code: 'operator_required',
    });
    expect(await refusal(h.caller().api.ops.chaosPress({ switch: 'kill_web' }))).toMatchObject({
      code: 'unauthenticated',
    });
    expect(recording.pressed).toEqual([]);
  });

  it('an unknown switch is invalid input', async () => {
    const operator = await demoSession(h, 'operator');
    const api = h.caller({ cookie: operator }).api;
    expect(
      await refusal(api.ops.chaosPress({ switch: 'rm_rf' as unknown as 'kill_web' })),
    ).toMatchObject({ code: 'invalid_input' });
  });

  it('an operator reads the parts and presses switches; each answers what it did', async () => {
    const operator = await demoSession(h, 'operator');
    const api = h.caller({ cookie: operator }).api;
    const status = await api.ops.chaosStatus();
    expect(status).toMatchObject({ enabled: true, launcherError: null });
    expect(status.enabled && status.parts[0]?.state).toBe('up');

    expect(await api.ops.chaosPress({ switch: 'pause_worker' })).toMatchObject({
      switch: 'pause_worker',
      did: 'pause_worker done',
    });
    expect(recording.pressed).toEqual(['pause_worker']);

    // Processor faults go to the caller's own processor account.
    const fault = await api.ops.chaosPress({ switch: 'processor_charge_then_drop' });
    expect(fault.did).toBe('armed processor_charge_then_drop');
    expect(recording.faults).toEqual([['acct_tenant_a', 'processor_charge_then_drop']]);
  });

  it('the parts are answered while the database is away: only the faults are blanked', async () => {
    const api = h.caller({ cookie: await demoSession(h, 'operator') }).api;
    await api.ops.chaosStatus();
    // Another connection holds `tenants` locked: every read of it waits (lock_timeout, 5 s).
    // The session's tenant is known, and the faults' read is given up after its deadline.
    const status = await h.database.client.sql.begin(async (tx) => {
      await tx`lock table tenants in access exclusive mode`;
      return api.ops.chaosStatus();
    });
    expect(status).toMatchObject({
      enabled: true,
      parts: [{ name: 'worker-1', state: 'up' }],
      launcherError: null,
      processorFaults: [],
      processorError: 'the database did not answer within 2000 ms',
    });
  });

  it('each processor fault switch says whether it is armed and which payment it last hit', async () => {
    const db = h.database.client.db;
    const product = { tenant_a: 'bookmark', tenant_b: 'mug' };
    const payAs = (tenant: 'tenant_a' | 'tenant_b') =>
      h
        .caller({ ...bearer(tenant), 'idempotency-key': randomUUID() })
        .api.checkout.pay({ lines: [{ productId: product[tenant], quantity: 1 }] });
    const charged = await payAs('tenant_a');
    const webhooked = await payAs('tenant_a');
    const elsewhere = await payAs('tenant_b');
    const intentOf = async (paymentId: string, intent: string) => {
      await h.database.client
        .sql`update payments set processor_payment_intent_id = ${intent} where id = ${paymentId}`;
    };
    await intentOf(charged.paymentId, 'pi_chaos_a');
    // Another merchant's payment is never named, whatever its intent id.
    await intentOf(elsewhere.paymentId, 'pi_chaos_b');
    await db.insert(paymentEvents).values({
      tenantId: 'tenant_a',
      paymentId: webhooked.paymentId,
      actor: 'processor',
      kind: 'webhook.applied',
      detail: { to: 'webhook', eventId: 'evt_chaos_a', type: 'payment_intent.succeeded' },
    });
    const use = (processorObject: string, operation = 'payment_intents.confirm') => ({
      at: '2026-11-25T12:04:05.000Z',
      operation,
      processorObject,
    });
    recording.faultStates.push(
      { switch: 'processor_fail_after_charge', armed: false, lastUse: use('pi_chaos_a') },
      { switch: 'processor_charge_then_drop', armed: false, lastUse: use('pi_chaos_b') },
      {
        switch: 'processor_duplicate_webhook',
        armed: false,
        lastUse: use('evt_chaos_a', 'webhooks.deliver'),
      },
      { switch: 'processor_delay', armed: true, lastUse: null },
    );
    try {
      const operator = await demoSession(h, 'operator');
      const status = await h.caller({ cookie: operator }).api.ops.chaosStatus();
      expect(status).toMatchObject({ enabled: true, processorError: null });
      // Asked about the caller's own processor account.
      expect(recording.faultAccounts.at(-1)).toBe('acct_tenant_a');
      expect(status.enabled && status.processorFaults).toEqual([
        {
          switch: 'processor_fail_after_charge',
          armed: false,
          lastUse: { ...use('pi_chaos_a'), paymentId: charged.paymentId },
        },
        {
          switch: 'processor_charge_then_drop',
          armed: false,
          lastUse: { ...use('pi_chaos_b'), paymentId: null },
        },
        {
          switch: 'processor_duplicate_webhook',
          armed: false,
          lastUse: { ...use('evt_chaos_a', 'webhooks.deliver'), paymentId: webhooked.paymentId },
        },
        { switch: 'processor_delay', armed: true, lastUse: null },
      ]);
    } finally {
      recording.faultStates.length = 0;
    }
  });

  it('drop_next_response marks this browser with a one-shot cookie token', async () => {
    const operator = await demoSession(h, 'operator');
    const caller = h.caller({ cookie: operator });
    await caller.api.ops.chaosPress({ switch: 'drop_next_response' });
    const cookie = caller.resHeaders.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      /^once_chaos_drop=[0-9a-f]{32}; Path=\/api\/trpc; HttpOnly; SameSite=Lax/,
    );
    expect(recording.dropTokens).toEqual([cookie.split(';')[0]!.split('=')[1]]);
  });
});

describe('chaos switches are rate-limited: one press of a switch per cooldown', () => {
  let h: ApiTestHarness;
  let now = Date.parse('2030-01-01T00:00:00Z');
  const recording = recordingSwitchboard();
  let nextLauncherError: Error | undefined;
  beforeAll(async () => {
    h = await createApiTestHarness('api_chaos_cooldown', {
      chaos: {
        ...recording.board,
        pressLauncherSwitch: async (name) => {
          const error = nextLauncherError;
          nextLauncherError = undefined;
          if (error) throw error;
          return recording.board.pressLauncherSwitch(name);
        },
      },
      operatorCode: OPERATOR_CODE,
      clock: { now: () => new Date(now) },
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('a second kill_worker within 10 s is 429 chaos_switch_rate_limited + Retry-After and kills nothing', async () => {
    const operator = await demoSession(h, 'operator');
    expect(
      (await h.caller({ cookie: operator }).api.ops.chaosPress({ switch: 'kill_worker' })).did,
    ).toBe('kill_worker done');
    now += 4_000;
    const again = h.caller({ cookie: operator });
    expect(await refusal(again.api.ops.chaosPress({ switch: 'kill_worker' }))).toEqual({
      trpc: 'TOO_MANY_REQUESTS',
      code: 'chaos_switch_rate_limited',
    });
    expect(again.resHeaders.get('retry-after')).toBe('6');
    // Another merchant's operator is no way around it: the processes are shared.
    const otherMerchant = await demoSession(h, 'operator', 'tenant_b');
    expect(
      await refusal(
        h.caller({ cookie: otherMerchant }).api.ops.chaosPress({ switch: 'kill_worker' }),
      ),
    ).toMatchObject({ code: 'chaos_switch_rate_limited' });
    // Other switches are not held up.
    await h.caller({ cookie: operator }).api.ops.chaosPress({ switch: 'pause_worker' });
    expect(recording.pressed).toEqual(['kill_worker', 'pause_worker']);
    now += 6_000;
    await h.caller({ cookie: operator }).api.ops.chaosPress({ switch: 'kill_worker' });
    expect(recording.pressed).toEqual(['kill_worker', 'pause_worker', 'kill_worker']);
  });

  it('processor faults are counted per merchant', async () => {
    now += 60_000;
    const a = h.caller({ cookie: await demoSession(h, 'operator') }).api;
    await a.ops.chaosPress({ switch: 'processor_delay' });
    expect(await refusal(a.ops.chaosPress({ switch: 'processor_delay' }))).toMatchObject({
      code: 'chaos_switch_rate_limited',
    });
    const b = h.caller({ cookie: await demoSession(h, 'operator', 'tenant_b') }).api;
    await b.ops.chaosPress({ switch: 'processor_delay' });
    expect(recording.faults.filter(([, name]) => name === 'processor_delay')).toEqual([
      ['acct_tenant_a', 'processor_delay'],
      ['acct_tenant_b', 'processor_delay'],
    ]);
  });

  it('a press that could not act costs no wait', async () => {
    now += 60_000;
    const api = h.caller({ cookie: await demoSession(h, 'operator') }).api;
    nextLauncherError = new ChaosSwitchError('no worker is up to kill');
    expect(await refusal(api.ops.chaosPress({ switch: 'kill_worker' }))).toMatchObject({
      code: 'chaos_switch_failed',
    });
    expect((await api.ops.chaosPress({ switch: 'kill_worker' })).did).toBe('kill_worker done');
  });

  it('the launcher’s own refusal (its count outlives a web restart) is 429 too, not a failure', async () => {
    now += 60_000;
    const caller = h.caller({ cookie: await demoSession(h, 'operator') });
    nextLauncherError = new ChaosSwitchRateLimited('kill_web was pressed moments ago', 17);
    expect(await refusal(caller.api.ops.chaosPress({ switch: 'kill_web' }))).toEqual({
      trpc: 'TOO_MANY_REQUESTS',
      code: 'chaos_switch_rate_limited',
    });
    expect(caller.resHeaders.get('retry-after')).toBe('17');
  });
});

describe('chaos switches offered: the launcher says which of its own it works', () => {
  let h: ApiTestHarness;
  const recording = recordingSwitchboard();
  let launcher: () => Promise<readonly LauncherSwitchName[]>;
  recording.board.launcherSwitches = () => launcher();
  beforeAll(async () => {
    h = await createApiTestHarness('api_chaos_offered', {
      chaos: recording.board,
      operatorCode: OPERATOR_CODE,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('a replicated cluster offers the failover in place of the crash-restart; a launcher not answering, none of its switches', async () => {
    const api = h.caller({ cookie: await demoSession(h, 'operator') }).api;
    const offered = async () => {
      const status = await api.ops.chaosStatus();
      return status.enabled ? status.switches : [];
    };
    launcher = async () => ['kill_worker', 'pause_worker', 'kill_web', 'db_failover'];
    expect(await offered()).toContain('db_failover');
    expect(await offered()).not.toContain('pg_crash_restart');
    expect(await offered()).toContain('processor_delay');

    launcher = async () => ['kill_worker', 'pause_worker', 'kill_web', 'pg_crash_restart'];
    expect(await offered()).not.toContain('db_failover');

    launcher = async () => {
      throw new ChaosSwitchError("the launcher's control channel did not answer");
    };
    const silent = await offered();
    expect(silent).not.toContain('kill_worker');
    expect(silent).toContain('drop_next_response');
  });
});

describe('a process switch marks the payment it hit', () => {
  let h: ApiTestHarness;
  const recording = recordingSwitchboard();
  beforeAll(async () => {
    h = await createApiTestHarness('api_chaos_marks', {
      chaos: recording.board,
      operatorCode: OPERATOR_CODE,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  // The timeline of scene 3 drew the lease's end as the only cross: the kill itself was nowhere.
  it("kill_worker on the worker charging a payment is on that payment's timeline, in the operator's lane", async () => {
    const paid = await h
      .caller({ ...bearer('tenant_a'), 'idempotency-key': randomUUID() })
      .api.checkout.pay({ lines: [{ productId: 'bookmark', quantity: 1 }] });
    await h.database.client.sql`
      update outbox_jobs
         set status = 'running', locked_by = 'worker-2', locked_until = now() + interval '60 seconds'
       where tenant_id = 'tenant_a' and payment_id = ${paid.paymentId}`;
    const operator = await demoSession(h, 'operator');
    await h.caller({ cookie: operator }).api.ops.chaosPress({ switch: 'kill_worker' });
    const timeline = await h
      .caller({ cookie: operator })
      .api.ops.paymentTimeline({ paymentId: paid.paymentId });
    expect(timeline.events.filter((event) => event.kind === 'chaos.pressed')).toEqual([
      expect.objectContaining({
        actor: 'operator',
        detail: { to: 'worker:worker-2', switch: 'kill_worker', did: 'kill_worker done' },
      }),
    ]);
  });
});

describe('the chaos switches need the operator code, whatever signed the session in', () => {
  let h: ApiTestHarness;
  const pressed: string[] = [];
  const board: ChaosSwitchboard = {
    parts: async () => [{ name: 'worker-1', state: 'up', pid: 42, restarts: 0 }],
    pressLauncherSwitch: async (name) => {
      pressed.push(name);
      return `${name} done`;
    },
    armProcessorFault: async (_account, name) => `armed ${name}`,
    processorFaults: async () => [],
    armDropNextResponse: () => {},
  };
  beforeAll(async () => {
    h = await createApiTestHarness('web_chaos_operator_code', {
      operatorCode: OPERATOR_CODE,
      chaos: board,
    });
  });
  afterAll(async () => {
    await h.drop();
  });

  it('an API-key session and the API key itself read the cockpit but press no switch', async () => {
    const start = h.caller();
    await start.api.session.start({ apiKey: 'once_test_tenant_a' });
    const byKey = start.resHeaders.get('set-cookie')!.split(';')[0]!;
    for (const headers of [{ cookie: byKey }, bearer('tenant_a')]) {
      const api = h.caller(headers).api;
      expect(await api.ops.payments({ limit: 1 })).toBeDefined();
      expect(await refusal(api.ops.chaosPress({ switch: 'kill_worker' }))).toEqual({
        trpc: 'FORBIDDEN',
        code: 'operator_code_required',
      });
      expect(await api.ops.chaosStatus()).toMatchObject({
        enabled: true,
        pressable: false,
      });
    }
    expect(pressed).toEqual([]);
    const byCode = h.caller({ cookie: await demoSession(h, 'operator') }).api;
    expect(await byCode.ops.chaosStatus()).toMatchObject({ enabled: true, pressable: true });
    expect(await byCode.ops.chaosPress({ switch: 'kill_worker' })).toMatchObject({
      did: 'kill_worker done',
    });
    expect(pressed).toEqual(['kill_worker']);
  });
});
