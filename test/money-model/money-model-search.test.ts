import { createHash, randomUUID } from 'node:crypto';
import { demoTenantsWithApiKeys, seedDemoData } from '@once/db/seed';
import { verifyInvariant } from '@once/invariant';
import {
  createProcessorTestDatabase,
  type ProcessorTestDatabase,
  type RunningProcessor,
  startTestProcessor,
} from '@once/processor/testing';
import {
  type ServedHandler,
  startWebTestProcess,
  startWebTestServer,
  type WebTestServer,
} from '@once/web/testing';
import { createInProcessWorker, type InProcessWorker } from '@once/worker/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  emptyModel,
  explainBatch,
  explainBatchAll,
  keysExpired,
  type Model,
  type ModelRequest,
  type MoneyOp,
  type RequestOp,
  shopperMayRead,
  type Tenant,
  type Transport,
  unsure,
  workerRan,
} from './money-model.ts';
import { sendRequest } from './transports.ts';

/**
 * The model-based search over the merchant API: seeded sequences of pays, then batches of
 * captures, voids and refunds sent at once over REST, GraphQL, tRPC (a merchant's API key),
 * the cockpit (an operator's session, signed in with the operator code or the API key and out
 * on the server as the run goes) and two shoppers' sessions, by two merchants, with keys drawn
 * from a small pool (so keys repeat, on another transport, operation, payment or merchant),
 * amounts at the boundaries, the API key rotated (alone or while a batch is in flight, its old
 * key still sent), the keys' retention ended, and the real worker run between batches against
 * the real processor. Two web processes share the database, as behind a load balancer: each
 * request, sign-in, sign-out and read goes to a web drawn with it, so what one web keeps in
 * its own memory (a session it confirmed, a key it runs) must not change any answer. Every
 * answer must be one the reference model (./money-model.ts) allows for some order of its
 * batch; at the end the app's books equal the model's and the invariant holds
 * against the processor's ledger. A failure shrinks to the shortest sequence and prints its
 * seed and path. Reads in between must tell what the model holds. `npm run search -- --runs N
 * --seed S` runs a long search.
 */
const RUNS = Number(process.env.ONCE_MODEL_RUNS ?? 40);
const SEED = process.env.ONCE_MODEL_SEED ? Number(process.env.ONCE_MODEL_SEED) : undefined;
const PATH = process.env.ONCE_MODEL_PATH || undefined;
/**
 * Web processes the requests are spread over (`ONCE_MODEL_WEBS`, 1 or 2): the draws are the
 * same either way, so a seed found with two replays against one to tell a per-process bug.
 */
const WEBS = Number(process.env.ONCE_MODEL_WEBS ?? 2);
if (WEBS !== 1 && WEBS !== 2) throw new Error(`ONCE_MODEL_WEBS must be 1 or 2, got ${WEBS}`);
/** The one product each merchant's checkouts buy (quantity 1 or 2): book_sre, mug. */
const PRICES = { a: 3999, b: 1500 };
/** Merchant b's API key (merchant a's is rotated by the runs: `apiKeyA`). */
const API_KEY_B = 'once_test_tenant_b';
/** Two shoppers of merchant a per run. */
const SHOPPERS = 2;
/** What signs an operator in to the cockpit here. */
const OPERATOR_CODE = 'money-model-operator-code-01234';
/** How many keys a run shares between its requests; one more slot draws a fresh key. */
const KEY_POOL = 4;

let web: WebTestServer;
/** The second web process (another Node process on the same database), when `WEBS` is 2. */
let otherWeb: ServedHandler | undefined;
let processorDb: ProcessorTestDatabase;
let processor: RunningProcessor;
let worker: InProcessWorker;
/** Merchant a's API key now: the runs rotate it and the server keeps it between runs. */
let apiKeyA = 'once_test_tenant_a';
/** Keys a cut left held with nothing committed, that a retry met (see `heldLeaseRunsOut`). */
let heldAfterCut = 0;
/** What the search sent, by answer (`ok` or the refusal's code): it must reach every rule. */
const answered = new Map<string, number>();
const count = (answers: readonly Answer[]) => {
  for (const a of answers) {
    const name = a.ok ? 'ok' : a.code;
    answered.set(name, (answered.get(name) ?? 0) + 1);
  }
};

/** Both webs' environment: the same secrets, as every web of a deployment has. */
const WEB_ENV = {
  SESSION_SECRET: 'money-model-search-secret-012345',
  ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
  ONCE_OPERATOR_CODE: OPERATOR_CODE,
  // Every run signs in shoppers and operators from one address.
  ONCE_SESSION_STARTS_PER_ADDRESS_PER_MINUTE: '0',
  ONCE_SESSION_STARTS_PER_TENANT_PER_MINUTE: '0',
};

beforeAll(async () => {
  web = await startWebTestServer('money_model', WEB_ENV);
  [otherWeb] = await Promise.all([
    WEBS > 1 ? startWebTestProcess(web.database.url, WEB_ENV) : undefined,
    (async () => {
      processorDb = await createProcessorTestDatabase('money_model');
      processor = await startTestProcessor({ databaseUrl: processorDb.url });
    })(),
  ]);
  worker = createInProcessWorker({ sql: web.database.client.sql, processorUrl: processor.url });
}, 120_000);

afterAll(async () => {
  await otherWeb?.close();
  await processor?.stop();
  await processorDb?.drop();
  await web?.close();
});

/** What the system under test is, for the commands: where to send and which run this is. */
interface Real {
  /** The webs' URLs: a command's `web` (0 or 1) picks one of them. */
  urls: string[];
  run: string;
  log: string[];
  /** The operator's session cookie (`name=value`), kept after its sign-out as a copy would be. */
  session?: string;
  /** The shoppers' session cookies. */
  shoppers: string[];
  /** Merchant a's API keys of this run by generation (`keyGen`): the first, then each rotation's. */
  apiKeys: string[];
  /** The last money request merchant a sent with its API key: a rotation retries it. */
  lastMoney?: ModelRequest & { op: MoneyOp };
}

/** The URL of web `web` (drawn 0 or 1; with one web, always it). */
const at = (real: Real, web: number) => real.urls[web % real.urls.length]!;

const keyOf = (real: Real, slot: number) =>
  slot < KEY_POOL ? `${real.run}-k${slot}` : `${real.run}-fresh-${randomUUID()}`;

/** What a request is sent with: its merchant's API key of its generation, or its session's cookie. */
function credentialOf(real: Real, r: ModelRequest): string | undefined {
  if (r.transport === 'cockpit') return real.session;
  if (r.transport === 'shopper') return real.shoppers[r.shopper ?? 0];
  return r.tenant === 'b' ? API_KEY_B : real.apiKeys[r.keyGen ?? 0];
}

/** Sends a run's request to web `web` and logs it with its answer. */
async function send(
  real: Real,
  m: Model,
  r: ModelRequest & { op: RequestOp },
  web: number,
): Promise<Answer> {
  const answer = await sendRequest(
    at(real, web),
    r,
    m.paymentIds[r.payment],
    credentialOf(real, r),
  );
  count([answer]);
  if (
    r.op !== 'pay' &&
    r.tenant !== 'b' &&
    r.transport !== 'cockpit' &&
    r.transport !== 'shopper'
  ) {
    real.lastMoney = { ...r, op: r.op };
  }
  real.log.push(`${describeRequest(r)} @web${web % real.urls.length} -> ${JSON.stringify(answer)}`);
  return answer;
}

class PayCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly transport: Exclude<Transport, 'cockpit'>,
    readonly keySlot: number,
    readonly quantity: number,
    readonly manual: boolean,
    readonly tenant: Tenant = 'a',
    readonly shopper = 0,
    readonly web = 0,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    const request: ModelRequest & { op: 'pay' } = {
      op: 'pay',
      transport: this.transport,
      key: keyOf(real, this.keySlot),
      payment: m.payments.length,
      amount: this.quantity,
      manual: this.manual,
      tenant: this.transport === 'shopper' ? 'a' : this.tenant,
      shopper: this.shopper,
      keyGen: m.keyGen,
    };
    const answer = await send(real, m, request, this.web);
    const next = explainBatch(m, [request], [answer], PRICES);
    if (!next) throw new Error(`no model explains:\n${real.log.join('\n')}`);
    if (answer.ok && next.payments.length > m.payments.length) {
      next.paymentIds[request.payment] = answer.id!;
    }
    Object.assign(m, next);
  }
  toString = () =>
    `pay(${this.transport}, ${this.tenant}, k${this.keySlot}, x${this.quantity}${this.manual ? ', manual' : ''}, web ${this.web})`;
}

/** One money request of a batch, with its payment and amount chosen relative to the model. */
interface Draw {
  op: MoneyOp;
  transport: Transport;
  keySlot: number;
  paymentSlot: number;
  amount: 'none' | 'one' | 'half' | 'all' | 'over' | 'zero';
  /** Whose API key (REST, GraphQL, tRPC); the cockpit and the shoppers are merchant a's. */
  tenant: Tenant;
  shopper: number;
  /** Sent with merchant a's key from before the last rotation, when there was one. */
  stale: boolean;
  /** For a payment of the other merchant (else one of its own, when it has one). */
  foreign: boolean;
  /** The web process it is sent to. */
  web: number;
}

/**
 * What runs beside a batch's requests: the API key rotated, the operator signed out, or the
 * web's database sessions terminated (`cut`) while the requests are in flight.
 */
type Alongside = 'rotate' | 'signout' | 'cut';

class BatchCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly draws: readonly Draw[],
    readonly alongside?: Alongside,
    /** The web a sign-out beside the batch is sent to. */
    readonly alongsideWeb = 0,
  ) {}
  check = (m: Readonly<Model>) => m.paymentIds.length > 0;
  async run(m: Model, real: Real): Promise<void> {
    const requests = this.draws.map((d) => requestFor(m, real, d));
    const event = this.alongside;
    const [answers] = await Promise.all([
      Promise.all(requests.map((r, i) => send(real, m, r, this.draws[i]!.web))),
      event === 'rotate'
        ? rotateKey(real)
        : event === 'signout'
          ? signOut(real, this.alongsideWeb)
          : undefined,
      event === 'cut' ? cutWebSessions(real, this.draws.length) : undefined,
    ]);
    if (event) real.log.push(`${event} (beside the batch, web ${this.alongsideWeb})`);
    // A rotation or sign-out as a request of the batch: any order of it may explain the others.
    const changes = event === 'rotate' || event === 'signout';
    const all: ModelRequest[] = changes
      ? [...requests, { op: event, transport: 'cockpit', key: '', payment: -1 }]
      : requests;
    let models = explainBatchAll(m, all, changes ? [...answers, { ok: true }] : answers, PRICES);
    // What a cut left unsure is retried under its key, as a client must, until it is answered.
    for (const [i, r] of requests.entries()) {
      if (models.length === 0 || !unsure(answers[i]!)) continue;
      const retried = await retryUntilSure(real, m, r, this.draws[i]!.web);
      models = models.flatMap((c) => explainBatchAll(c, [r], [retried], PRICES));
    }
    const next = models[0];
    if (!next) {
      throw new Error(
        `no order of the last batch explains its answers:\n${real.log.join('\n')}\nmodel before it: ${JSON.stringify(m.payments)}`,
      );
    }
    Object.assign(m, next);
  }
  toString = () =>
    `batch(${this.draws.map((d) => JSON.stringify(d)).join(', ')}${this.alongside ? `; ${this.alongside} web ${this.alongsideWeb}` : ''})`;
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

/**
 * Terminates the web's database sessions that are in a query or a transaction, after the
 * batch's requests left (a few ms in, by its size): a COMMIT or a statement cut mid-flight.
 */
async function cutWebSessions(real: Real, size: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 2 * size));
  const [cut] = await web.database.client.sql<{ n: number }[]>`
    select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
    where datname = current_database() and application_name = 'once-web' and pid <> pg_backend_pid()
      and state in ('active', 'idle in transaction')`;
  real.log.push(`cut ${cut?.n ?? 0} web database sessions`);
}

/**
 * A fetch that sends again on 503 (a database session was cut a moment ago and the web's pool
 * still meets it), as a client told to retry does.
 */
async function fetchPast503(url: string, init?: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const answer = await fetch(url, init);
    if (answer.status !== 503 || attempt === 20) return answer;
    await answer.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A key a cut left held runs out its lease, as if its time had passed. A leased GraphQL action
 * whose COMMIT was cut keeps its lease (it cannot tell it committed); one that committed nothing
 * should have been freed by its clean-up (money-action-cut.test.ts proves it): the search counts
 * those it meets (a cut may also land on the reservation's own commit, whose answer is lost).
 */
async function heldLeaseRunsOut(real: Real, r: ModelRequest): Promise<void> {
  const held = await web.database.client.sql<{ recovery_point: string }[]>`
    update idempotency_keys set locked_until = now() - interval '1 second'
    where key = ${r.key} and state = 'in_progress' returning recovery_point`;
  const uncommitted = held.filter((row) => row.recovery_point === 'started').length;
  heldAfterCut += uncommitted;
  real.log.push(`${held.length} held after the cut (${uncommitted} with nothing committed)`);
}

/**
 * The request sent again under its key until its answer is sure (the database is back), to
 * each web in turn from the one it first went to, as a load balancer may send a retry.
 */
async function retryUntilSure(
  real: Real,
  m: Model,
  r: ModelRequest & { op: RequestOp },
  web: number,
) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const answer = await send(real, m, r, web + 1 + attempt);
    const inUse = !answer.ok && answer.code === 'idempotency_key_in_use';
    if (!unsure(answer) && !inUse) return answer;
    if (inUse) await heldLeaseRunsOut(real, r);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`a request stayed unsure after 20 retries\n${real.log.join('\n')}`);
}

/** An operator signs in to the cockpit with the operator code, or the API key: a new session. */
class SignInCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly withApiKey: boolean,
    readonly web: number,
  ) {}
  check = (m: Readonly<Model>) => m.session !== 'active';
  async run(m: Model, real: Real): Promise<void> {
    const cookie = await startSession(
      at(real, this.web),
      this.withApiKey
        ? { apiKey: real.apiKeys[m.keyGen] }
        : { demoTenantId: 'tenant_a', role: 'operator', operatorCode: OPERATOR_CODE },
      'once_operator_session',
    );
    real.log.push(
      `sign in${this.withApiKey ? ' with the API key' : ''} @web${this.web % real.urls.length} -> ${cookie ? 'ok' : 'refused'}`,
    );
    if (!cookie) throw new Error(`the operator's sign-in was refused\n${real.log.join('\n')}`);
    real.session = cookie;
    m.session = 'active';
    m.sessionByKey = this.withApiKey;
    m.sessions++;
  }
  toString = () => `sign in${this.withApiKey ? ' (API key)' : ''}, web ${this.web}`;
}

/** A session's cookie (`name=value`) from `session.start`, or undefined when it was refused. */
async function startSession(
  url: string,
  input: unknown,
  cookieName: string,
): Promise<string | undefined> {
  const answer = await fetchPast503(`${url}/api/trpc/session.start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  const line = answer.headers.getSetCookie().find((l) => l.startsWith(`${cookieName}=`));
  return answer.ok ? line?.split(';')[0] : undefined;
}

/** The operator signs out: the session ends on the server; the search keeps sending its cookie. */
class SignOutCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly web: number) {}
  check = (m: Readonly<Model>) => m.session === 'active';
  async run(m: Model, real: Real): Promise<void> {
    await signOut(real, this.web);
    real.log.push(`sign out @web${this.web % real.urls.length}`);
    m.session = 'ended';
    await expectCockpitAsModelled(m, real);
  }
  toString = () => `sign out, web ${this.web}`;
}

/** The cockpit's session is open exactly when the model says so (`session.current`), on every web. */
async function expectCockpitAsModelled(m: Model, real: Real): Promise<void> {
  if (!real.session) return;
  for (const [i, url] of real.urls.entries()) {
    const answer = await fetchPast503(`${url}/api/trpc/session.current`, {
      headers: { cookie: real.session, 'x-once-session': 'operator' },
    });
    const open = (await answer.json()).result?.data?.role === 'operator';
    real.log.push(`the cockpit's session reads ${open ? 'open' : 'closed'} @web${i}`);
    if (open !== (m.session === 'active')) {
      throw new Error(
        `the cockpit's session is ${open ? 'open' : 'closed'} on web ${i}, the model says ${m.session}\n${real.log.join('\n')}`,
      );
    }
  }
}

async function signOut(real: Real, web: number): Promise<void> {
  const answer = await fetchPast503(`${at(real, web)}/api/trpc/session.end`, {
    method: 'POST',
    headers: {
      ...(real.session ? { cookie: real.session } : {}),
      'x-once-session': 'operator',
      'content-type': 'application/json',
    },
  });
  if (!answer.ok) throw new Error(`sign-out answered ${answer.status}\n${real.log.join('\n')}`);
}

/**
 * Merchant a's API key is replaced (the seed run with a new key, as a deployment rotates it):
 * the old key opens nothing from then on, nor does an operator session it opened. The last
 * money request sent with the old key is then retried as a client would, under its key with
 * the new API key (the key is the merchant's: the first answer), the old one, and the other
 * merchant's (which never sees it).
 */
class RotateKeyCommand implements fc.AsyncCommand<Model, Real> {
  /** The web the first retry goes to; the next go to the others in turn. */
  constructor(readonly web: number) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    await rotateKey(real);
    real.log.push('rotate');
    m.keyGen++;
    if (m.sessionByKey && m.session === 'active') m.session = 'ended';
    await expectCockpitAsModelled(m, real);
    const last = real.lastMoney;
    if (!last) return;
    for (const [i, retry] of [
      { ...last, keyGen: m.keyGen },
      { ...last, keyGen: m.keyGen - 1 },
      { ...last, tenant: 'b' as const },
    ].entries()) {
      const answer = await send(real, m, retry, this.web + i);
      const next = explainBatch(m, [retry], [answer], PRICES);
      if (!next)
        throw new Error(`no model explains a retry after the rotation:\n${real.log.join('\n')}`);
      Object.assign(m, next);
    }
  }
  toString = () => `rotate the API key, web ${this.web}`;
}

async function rotateKey(real: Real): Promise<void> {
  const key = `once_model_${randomUUID()}`;
  // Through the test's own pool: a batch's cut may have just terminated the web's sessions.
  await seedDemoData(web.database.client.db, demoTenantsWithApiKeys({ tenant_a: key }));
  apiKeyA = key;
  real.apiKeys.push(key);
}

/**
 * The retention of the run's keys ends (their rows expire, as a day later): what a key made
 * must still be answered by the app's own uniqueness, whoever sends it.
 */
class ExpireKeysCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    await web.database.client.sql`
      update idempotency_keys set expires_at = now() - interval '1 second'
      where key like ${`${real.run}-%`}`;
    real.log.push('keys expired');
    keysExpired(m);
  }
  toString = () => 'keys expired';
}

/**
 * A merchant's read of one payment (REST): what it says was received, refunded and capturable;
 * the other merchant's key reads nothing (404), nor does merchant a's key from before a rotation.
 */
class ReadCommand implements fc.AsyncCommand<Model, Real> {
  /** `web` reads as the payment's merchant; the other web is asked by the others. */
  constructor(
    readonly paymentSlot: number,
    readonly web: number,
  ) {}
  check = (m: Readonly<Model>) => m.paymentIds.length > 0;
  async run(m: Model, real: Real): Promise<void> {
    const index = this.paymentSlot % m.paymentIds.length;
    const p = m.payments[index]!;
    const get = (apiKey: string, web: number) =>
      fetchPast503(`${at(real, web)}/api/v1/payments/${m.paymentIds[index]}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
    const own = p.tenant === 'a' ? real.apiKeys[m.keyGen]! : API_KEY_B;
    const read = await (await get(own, this.web)).json();
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
    const others = [p.tenant === 'a' ? API_KEY_B : real.apiKeys[m.keyGen]!];
    if (m.keyGen > 0) others.push(real.apiKeys[m.keyGen - 1]!);
    const refusals = await Promise.all(
      others.map(async (key) => (await get(key, this.web + 1)).status),
    );
    real.log.push(`read payment=${index} -> ${JSON.stringify(seen)}, others ${refusals}`);
    const refusedAsDue = refusals[0] === 404 && (refusals[1] ?? 401) === 401;
    if (JSON.stringify(seen) !== JSON.stringify(expected) || !refusedAsDue) {
      throw new Error(
        `payment ${index} reads ${JSON.stringify(seen)} (the other merchant, an old key: ${refusals}), the model holds ${JSON.stringify(expected)} (404, 401)\n${real.log.join('\n')}`,
      );
    }
  }
  toString = () => `read(${this.paymentSlot}), web ${this.web}`;
}

/**
 * A shopper follows a payment (`checkout.status`) with no proof, the proof of the payment's
 * own checkout key, or of another key: found only if it placed the payment or proves its key.
 */
class ShopperReadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly shopper: number,
    readonly paymentSlot: number,
    readonly proof: 'none' | 'own' | 'other',
    readonly web: number,
  ) {}
  check = (m: Readonly<Model>) => m.paymentIds.length > 0;
  async run(m: Model, real: Real): Promise<void> {
    const index = this.paymentSlot % m.paymentIds.length;
    const key = { none: undefined, own: m.payments[index]!.key, other: keyOf(real, 0) }[this.proof];
    const input = {
      paymentId: m.paymentIds[index],
      ...(key ? { checkoutKeyProof: createHash('sha256').update(key).digest('hex') } : {}),
    };
    const answer = await fetchPast503(
      `${at(real, this.web)}/api/trpc/checkout.status?input=${encodeURIComponent(JSON.stringify(input))}`,
      { headers: { cookie: real.shoppers[this.shopper]! } },
    );
    const body = await answer.json();
    const seen = body.result?.data?.paymentId ?? body.error?.data?.code;
    real.log.push(
      `shopper ${this.shopper} reads payment=${index} proof=${this.proof} @web${this.web % real.urls.length} -> ${seen}`,
    );
    const expected = shopperMayRead(m, index, this.shopper, key)
      ? m.paymentIds[index]
      : 'payment_not_found';
    if (seen !== expected) {
      throw new Error(
        `shopper ${this.shopper} read payment ${index}: ${seen}, the model says ${expected}\n${real.log.join('\n')}`,
      );
    }
  }
  toString = () =>
    `shopper ${this.shopper} reads(${this.paymentSlot}, ${this.proof}), web ${this.web}`;
}

function requestFor(m: Model, real: Real, d: Draw): ModelRequest & { op: MoneyOp } {
  const byApiKey = d.transport !== 'cockpit' && d.transport !== 'shopper';
  const tenant = byApiKey ? d.tenant : 'a';
  const indexes = m.paymentIds.map((_, i) => i);
  const own = indexes.filter((i) => m.payments[i]!.tenant === tenant);
  const foreign = indexes.filter((i) => m.payments[i]!.tenant !== tenant);
  const among = d.foreign && foreign.length > 0 ? foreign : own.length > 0 ? own : indexes;
  const payment = among[d.paymentSlot % among.length]!;
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
  return {
    op: d.op,
    transport: d.transport,
    key: keyOf(real, d.keySlot),
    payment,
    amount,
    tenant,
    shopper: d.shopper,
    keyGen: tenant === 'a' && d.stale && m.keyGen > 0 ? m.keyGen - 1 : m.keyGen,
  };
}

const describeRequest = (r: ModelRequest) =>
  `${r.op} ${r.transport}${r.transport === 'shopper' ? r.shopper : ''}${r.tenant === 'b' ? ' tenant=b' : ''}${
    r.keyGen ? ` keyGen=${r.keyGen}` : ''
  } key=${r.key.split('-').pop()} payment=${r.payment}${
    r.amount === undefined ? '' : ` amount=${r.amount}`
  }${r.manual ? ' manual' : ''}`;

// A shopper's money request is refused before anything is read: drawn half as often.
const transport = fc.constantFrom<Transport>(
  ...(['rest', 'graphql', 'trpc', 'cockpit'] as const).flatMap((t) => [t, t]),
  'shopper',
);
const keySlot = fc.integer({ min: 0, max: KEY_POOL });
const tenant = fc.constantFrom<Tenant>('a', 'a', 'a', 'b');
const shopper = fc.nat(SHOPPERS - 1);
/** Always drawn from both webs (so seeds replay with `WEBS` 1): `at` folds it onto what runs. */
const webIndex = fc.nat(1);
const draw = fc.record<Draw>({
  op: fc.constantFrom<MoneyOp>('capture', 'void', 'refund'),
  transport,
  keySlot,
  paymentSlot: fc.nat(4),
  // Whole and over amounts twice as often: what is left is what two refunds race for.
  amount: fc.constantFrom('none', 'one', 'half', 'all', 'all', 'over', 'over', 'zero'),
  tenant,
  shopper,
  stale: fc.boolean(),
  foreign: fc.constantFrom(false, false, false, true),
  web: webIndex,
});
const alongside = fc.option(fc.constantFrom<Alongside>('rotate', 'signout', 'cut'), { freq: 2 });
/** A batch of one to four money requests at once (drawn twice as often as other commands). */
const batch = fc
  .tuple(fc.array(draw, { minLength: 1, maxLength: 4 }), alongside, webIndex)
  .map(([draws, event, web]) => new BatchCommand(draws, event ?? undefined, web));
const commands = fc.commands(
  [
    fc
      .tuple(
        fc.constantFrom<Exclude<Transport, 'cockpit'>>('rest', 'graphql', 'trpc', 'shopper'),
        keySlot,
        fc.integer({ min: 1, max: 2 }),
        fc.boolean(),
        tenant,
        shopper,
        webIndex,
      )
      .map(([t, k, q, manual, who, s, w]) => new PayCommand(t, k, q, manual, who, s, w)),
    batch,
    batch,
    // A batch of one request repeated (a double click, a retry racing its original), on either web.
    fc
      .tuple(
        draw,
        fc.integer({ min: 2, max: 3 }),
        fc.array(transport, { minLength: 3, maxLength: 3 }),
        fc.array(webIndex, { minLength: 3, maxLength: 3 }),
      )
      .map(
        ([d, n, ts, ws]) =>
          new BatchCommand(
            Array.from({ length: n }, (_, i) => ({ ...d, transport: ts[i]!, web: ws[i]! })),
          ),
      ),
    fc.constant(new WorkerCommand()),
    fc.tuple(fc.nat(4), webIndex).map(([slot, w]) => new ReadCommand(slot, w)),
    fc
      .tuple(
        shopper,
        fc.nat(4),
        fc.constantFrom<'none' | 'own' | 'other'>('none', 'own', 'other'),
        webIndex,
      )
      .map(([who, slot, proof, w]) => new ShopperReadCommand(who, slot, proof, w)),
    fc.tuple(fc.boolean(), webIndex).map(([withApiKey, w]) => new SignInCommand(withApiKey, w)),
    webIndex.map((w) => new SignOutCommand(w)),
    webIndex.map((w) => new RotateKeyCommand(w)),
    fc.constant(new ExpireKeysCommand()),
  ],
  { maxCommands: 16, size: 'max' },
);

describe('the model-based search over the merchant API', () => {
  it(
    "every answer of pays, captures, voids and refunds sent at once over REST, GraphQL, tRPC, the cockpit and shoppers' sessions, by two merchants, is one the model allows; the books and the ledger agree with it",
    async () => {
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          const real: Real = {
            urls: [web.server.url, ...(otherWeb ? [otherWeb.url] : [])],
            run: randomUUID().slice(0, 8),
            log: [],
            shoppers: [],
            apiKeys: [apiKeyA],
          };
          // Each shopper signs in on its own web, and its requests go to either.
          for (let i = 0; i < SHOPPERS; i++) {
            const cookie = await startSession(
              at(real, i),
              { demoTenantId: 'tenant_a' },
              'once_session',
            );
            if (!cookie) throw new Error('a shopper could not sign in');
            real.shoppers.push(cookie);
          }
          const model = emptyModel();
          // Every run starts with money to act on: a paid payment and an authorised one of
          // merchant a, a paid one of merchant b.
          for (const command of [
            new PayCommand('rest', KEY_POOL, 1, false),
            new PayCommand('graphql', KEY_POOL, 2, true, 'a', 0, 1),
            new PayCommand('rest', KEY_POOL, 1, false, 'b'),
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
        `money model search: ${RUNS} runs on ${WEBS} webs, ${(RUNS / minutes).toFixed(0)} runs/min; answers: ${JSON.stringify(Object.fromEntries(answered))}; keys held after a cut with nothing committed: ${heldAfterCut}`,
      );
      // A search that never reached a rule proves nothing about it (`npm run search --
      // --planted` tells this failure from a catch by its words).
      for (const rule of [
        'ok',
        'idempotency_key_reused',
        'refund_amount_too_large',
        'payment_not_authorized',
        'invalid_credentials',
        'payment_not_found',
        'operator_required',
      ]) {
        expect(answered.get(rule) ?? 0, `never answered ${rule}`).toBeGreaterThan(0);
      }
      const report = await verifyInvariant({
        databaseUrl: web.database.url,
        processorDatabaseUrl: processorDb.url,
        converged: true,
      });
      expect(report.violations).toEqual([]);
    },
    // A long search on a loaded machine may take 4 s a run.
    Math.max(600_000, RUNS * 4_000),
  );
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
      // Its timeline says why (a processor call that failed, a job that died).
      const timeline = await web.database.client.sql`
        select kind, detail from payment_events where payment_id = ${paymentId} order by seq`;
      throw new Error(
        `payment ${index} (${paymentId}): the app holds ${JSON.stringify(books)}, the model ${JSON.stringify(expected)}\n${real.log.join('\n')}\nits timeline: ${JSON.stringify(timeline)}`,
      );
    }
  }
}
