import { randomUUID } from 'node:crypto';
import { verifyInvariant } from '@once/invariant';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import { startWebTestServer, type WebTestServer } from '@once/web/testing';
import { createInProcessWorker, type InProcessWorker } from '@once/worker/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  emptyModel,
  explainBatch,
  type Model,
  type ModelRequest,
  type MoneyOp,
  type Transport,
  workerRan,
} from './money-model.ts';
import { sendRequest } from './transports.ts';

/**
 * The model-based search over the merchant API: seeded sequences of pays, then batches of
 * captures, voids and refunds sent at once over REST, GraphQL, tRPC (the merchant's API key)
 * and the cockpit (an operator's session, signed in and out on the server as the run goes), with
 * keys drawn from a small pool (so keys repeat, on another transport, operation or payment),
 * amounts at the boundaries, and the real worker run between batches against the real
 * processor. Every answer must be one the reference model (./money-model.ts) allows for some
 * order of its batch; at the end the app's books equal the model's and the invariant holds
 * against the processor's ledger. A failure shrinks to the shortest sequence and prints its
 * seed and path. Reads in between must tell what the model holds. `npm run search -- --runs N
 * --seed S` runs a long search.
 */
const RUNS = Number(process.env.ONCE_MODEL_RUNS ?? 40);
const SEED = process.env.ONCE_MODEL_SEED ? Number(process.env.ONCE_MODEL_SEED) : undefined;
const PATH = process.env.ONCE_MODEL_PATH || undefined;
/** book_sre, the one product the search buys (quantity 1 or 2). */
const UNIT_PRICE = 3999;
/** What signs an operator in to the cockpit here. */
const OPERATOR_CODE = 'money-model-operator-code-01234';
/** How many keys a run shares between its requests; one more slot draws a fresh key. */
const KEY_POOL = 4;

let web: WebTestServer;
let processorDb: ProcessorTestDatabase;
let processor: RunningProcessor;
let worker: InProcessWorker;
/** What the search sent, by answer (`ok` or the refusal's code): it must reach every rule. */
const answered = new Map<string, number>();
const count = (answers: readonly Answer[]) => {
  for (const a of answers) {
    const name = a.ok ? 'ok' : a.code;
    answered.set(name, (answered.get(name) ?? 0) + 1);
  }
};

beforeAll(async () => {
  web = await startWebTestServer('money_model', {
    SESSION_SECRET: 'money-model-search-secret-012345',
    ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
    ONCE_OPERATOR_CODE: OPERATOR_CODE,
  });
  processorDb = await createProcessorTestDatabase('money_model');
  processor = await startTestProcessor({ databaseUrl: processorDb.url });
  worker = createInProcessWorker({ sql: web.database.client.sql, processorUrl: processor.url });
}, 120_000);

afterAll(async () => {
  await processor?.stop();
  await processorDb?.drop();
  await web?.close();
});

/** What the system under test is, for the commands: where to send and which run this is. */
interface Real {
  url: string;
  run: string;
  log: string[];
  /** The operator's session cookie (`name=value`), kept after its sign-out as a copy would be. */
  session?: string;
}

const keyOf = (real: Real, slot: number) =>
  slot < KEY_POOL ? `${real.run}-k${slot}` : `${real.run}-fresh-${randomUUID()}`;

class PayCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly transport: Exclude<Transport, 'trpc'>,
    readonly keySlot: number,
    readonly quantity: number,
    readonly manual: boolean,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    const request: ModelRequest = {
      op: 'pay',
      transport: this.transport,
      key: keyOf(real, this.keySlot),
      payment: m.payments.length,
      amount: this.quantity,
      manual: this.manual,
    };
    const answer = await sendRequest(real.url, request, undefined);
    count([answer]);
    real.log.push(`${describeRequest(request)} -> ${JSON.stringify(answer)}`);
    const next = explainBatch(m, [request], [answer], UNIT_PRICE);
    if (!next) throw new Error(`no model explains:\n${real.log.join('\n')}`);
    const bound = next.bindings[request.key];
    if (answer.ok && bound && next.paymentIds[bound.payment] === undefined) {
      next.paymentIds[bound.payment] = answer.id!;
    }
    Object.assign(m, next);
  }
  toString = () =>
    `pay(${this.transport}, k${this.keySlot}, x${this.quantity}${this.manual ? ', manual' : ''})`;
}

/** One money request of a batch, with its payment and amount chosen relative to the model. */
interface Draw {
  op: MoneyOp;
  transport: Transport;
  keySlot: number;
  paymentSlot: number;
  amount: 'none' | 'one' | 'half' | 'all' | 'over' | 'zero';
}

class BatchCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly draws: readonly Draw[]) {}
  check = (m: Readonly<Model>) => m.paymentIds.length > 0;
  async run(m: Model, real: Real): Promise<void> {
    const requests = this.draws.map((d) => requestFor(m, real, d));
    const answers = await Promise.all(
      requests.map((r) => sendRequest(real.url, r, m.paymentIds[r.payment]!, real.session)),
    );
    count(answers);
    for (const [i, r] of requests.entries()) {
      real.log.push(`${describeRequest(r)} -> ${JSON.stringify(answers[i])}`);
    }
    const next = explainBatch(m, requests, answers, UNIT_PRICE);
    if (!next) {
      throw new Error(
        `no order of the last batch explains its answers:\n${real.log.join('\n')}\nmodel before it: ${JSON.stringify(m.payments)}`,
      );
    }
    Object.assign(m, next);
  }
  toString = () => `batch(${this.draws.map((d) => JSON.stringify(d)).join(', ')})`;
}

class WorkerCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    await worker.runDueJobs();
    workerRan(m);
    real.log.push('worker ran');
  }
  toString = () => 'worker';
}

/** An operator signs in to the cockpit with the operator code: a new session. */
class SignInCommand implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => m.session !== 'active';
  async run(m: Model, real: Real): Promise<void> {
    const answer = await fetch(`${real.url}/api/trpc/session.start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        demoTenantId: 'tenant_a',
        role: 'operator',
        operatorCode: OPERATOR_CODE,
      }),
    });
    const cookie = answer.headers
      .getSetCookie()
      .find((line) => line.startsWith('once_operator_session='));
    real.log.push(`sign in -> ${answer.status}`);
    // A refused start (the sign-in limit) leaves the operator where it was.
    if (!answer.ok || !cookie) return;
    real.session = cookie.split(';')[0];
    m.session = 'active';
    m.sessions++;
  }
  toString = () => 'sign in';
}

/** The operator signs out: the session ends on the server; the search keeps sending its cookie. */
class SignOutCommand implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => m.session === 'active';
  async run(m: Model, real: Real): Promise<void> {
    const answer = await fetch(`${real.url}/api/trpc/session.end`, {
      method: 'POST',
      headers: {
        cookie: real.session!,
        'x-once-session': 'operator',
        'content-type': 'application/json',
      },
    });
    real.log.push(`sign out -> ${answer.status}`);
    if (!answer.ok) throw new Error(`sign-out answered ${answer.status}\n${real.log.join('\n')}`);
    m.session = 'ended';
  }
  toString = () => 'sign out';
}

/** A merchant's read of one payment (REST): what it says was received, refunded and capturable. */
class ReadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly paymentSlot: number) {}
  check = (m: Readonly<Model>) => m.paymentIds.length > 0;
  async run(m: Model, real: Real): Promise<void> {
    const index = this.paymentSlot % m.paymentIds.length;
    const p = m.payments[index]!;
    const answer = await fetch(`${real.url}/api/v1/payments/${m.paymentIds[index]}`, {
      headers: { authorization: 'Bearer once_test_tenant_a' },
    });
    const read = await answer.json();
    const expected = {
      amountReceived: p.received,
      amountRefunded: p.refunded,
      amountCapturable: p.status === 'authorized' && !p.action ? p.amount : 0,
    };
    const seen = {
      amountReceived: read.amountReceived,
      amountRefunded: read.amountRefunded,
      amountCapturable: read.amountCapturable,
    };
    real.log.push(`read payment=${index} -> ${JSON.stringify(seen)}`);
    if (JSON.stringify(seen) !== JSON.stringify(expected)) {
      throw new Error(
        `payment ${index} reads ${JSON.stringify(seen)}, the model holds ${JSON.stringify(expected)}\n${real.log.join('\n')}`,
      );
    }
  }
  toString = () => `read(${this.paymentSlot})`;
}

function requestFor(m: Model, real: Real, d: Draw): ModelRequest {
  const payment = d.paymentSlot % m.paymentIds.length;
  const p = m.payments[payment]!;
  const base = d.op === 'refund' ? p.received - p.refunded : p.amount;
  const amounts = {
    none: undefined,
    one: 1,
    half: Math.max(1, Math.floor(base / 2)),
    all: Math.max(1, base),
    over: base + 1,
    zero: 0,
  };
  const amount = d.op === 'void' ? undefined : amounts[d.amount];
  return { op: d.op, transport: d.transport, key: keyOf(real, d.keySlot), payment, amount };
}

const describeRequest = (r: ModelRequest) =>
  `${r.op} ${r.transport} key=${r.key.split('-').pop()} payment=${r.payment}${
    r.amount === undefined ? '' : ` amount=${r.amount}`
  }${r.manual ? ' manual' : ''}`;

const transport = fc.constantFrom<Transport>('rest', 'graphql', 'trpc', 'cockpit');
const keySlot = fc.integer({ min: 0, max: KEY_POOL });
const draw = fc.record<Draw>({
  op: fc.constantFrom<MoneyOp>('capture', 'void', 'refund'),
  transport,
  keySlot,
  paymentSlot: fc.nat(3),
  amount: fc.constantFrom('none', 'one', 'half', 'all', 'over', 'zero'),
});
const commands = fc.commands(
  [
    fc
      .tuple(
        fc.constantFrom<'rest' | 'graphql'>('rest', 'graphql'),
        keySlot,
        fc.integer({ min: 1, max: 2 }),
        fc.boolean(),
      )
      .map(([t, k, q, manual]) => new PayCommand(t, k, q, manual)),
    fc.array(draw, { minLength: 1, maxLength: 4 }).map((draws) => new BatchCommand(draws)),
    // A batch of one request repeated (a double click, a retry racing its original).
    fc
      .tuple(
        draw,
        fc.integer({ min: 2, max: 3 }),
        fc.array(transport, { minLength: 3, maxLength: 3 }),
      )
      .map(
        ([d, n, ts]) =>
          new BatchCommand(Array.from({ length: n }, (_, i) => ({ ...d, transport: ts[i]! }))),
      ),
    fc.constant(new WorkerCommand()),
    fc.nat(3).map((slot) => new ReadCommand(slot)),
    fc.constant(new SignInCommand()),
    fc.constant(new SignOutCommand()),
  ],
  { maxCommands: 16, size: 'max' },
);

describe('the model-based search over the merchant API', () => {
  it('every answer of pays, captures, voids and refunds sent at once over REST, GraphQL and tRPC is one the model allows; the books and the ledger agree with it', async () => {
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const real: Real = { url: web.server.url, run: randomUUID().slice(0, 8), log: [] };
        const model = emptyModel();
        // Every run starts with money to act on: a paid payment and an authorised one.
        for (const command of [
          new PayCommand('rest', KEY_POOL, 1, false),
          new PayCommand('graphql', KEY_POOL, 2, true),
          new WorkerCommand(),
        ]) {
          await command.run(model, real);
        }
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await worker.runDueJobs();
        workerRan(model);
        await expectBooksAgree(model, real);
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: true },
    );
    const minutes = (performance.now() - started) / 60_000;
    console.log(
      `money model search: ${RUNS} runs, ${(RUNS / minutes).toFixed(0)} runs/min; answers: ${JSON.stringify(Object.fromEntries(answered))}`,
    );
    // A search that never reached a rule proves nothing about it.
    for (const rule of [
      'ok',
      'idempotency_key_reused',
      'refund_amount_too_large',
      'payment_not_authorized',
      'invalid_credentials',
    ]) {
      expect(answered.get(rule) ?? 0, rule).toBeGreaterThan(0);
    }
    const report = await verifyInvariant({
      databaseUrl: web.database.url,
      processorDatabaseUrl: processorDb.url,
      converged: true,
    });
    expect(report.violations).toEqual([]);
  }, 600_000);
});

/** The app's books for every payment of the run equal the model's. */
async function expectBooksAgree(model: Model, real: Real): Promise<void> {
  for (const [index, paymentId] of model.paymentIds.entries()) {
    const p = model.payments[index]!;
    const [books] = await web.database.client.sql<
      { status: string; received: number; refunded: number }[]
    >`
      select payment.status,
             case payment.status when 'succeeded' then payment.amount
                                 when 'captured' then coalesce(payment.amount_captured, 0)
                                 else 0 end as received,
             (select coalesce(sum(amount), 0)::int from refunds
               where tenant_id = payment.tenant_id and payment_id = payment.id
                 and status <> 'failed') as refunded
      from payments as payment where payment.id = ${paymentId}`;
    const expected = { status: p.status, received: p.received, refunded: p.refunded };
    if (JSON.stringify(books) !== JSON.stringify(expected)) {
      throw new Error(
        `payment ${index} (${paymentId}): the app holds ${JSON.stringify(books)}, the model ${JSON.stringify(expected)}\n${real.log.join('\n')}`,
      );
    }
  }
}
