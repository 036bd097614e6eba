import { AsyncLocalStorage } from 'node:async_hooks';
import { inspect } from 'node:util';
import { installDatabaseClock } from '@once/postgres/testing';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import fc from 'fast-check';
import { createSchema, createYoga } from 'graphql-yoga';
import { Hono } from 'hono';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { z } from 'zod';
import { type FetchExecution, fetchIdempotency } from '../adapters/fetch/index.ts';
import { idempotentDirectiveTypeDefs } from '../adapters/graphql/idempotent-fields.ts';
import { type GraphqlIdempotencyContext, useIdempotency } from '../adapters/graphql/plugin.ts';
import { idempotencyMiddleware } from '../adapters/hono/middleware.ts';
import { idempotentRouteHandler } from '../adapters/next/route-handler.ts';
import { idempotentAction } from '../adapters/next/server-action.ts';
import { idempotencyErrorFormatter } from '../adapters/trpc/error-formatter.ts';
import { createIdempotencyPlugin, type IdempotencyMeta } from '../adapters/trpc/plugin.ts';
import { createIdempotency, type Idempotency } from '../core/engine.ts';
import type { OperationPolicy } from '../core/types.ts';
import type { TransactionOf } from '../store/drizzle/drizzle-types.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import { startTcpProxy, viaPort } from '../testing/tcp-proxy.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';

/**
 * A model-based, concurrent search over every adapter the package ships, all on ONE store and
 * the same operation names: batches sent at once with keys from a small pool (so a key comes
 * back on another adapter, principal, tenant, body or operation), commits cut (the session
 * terminated inside its COMMIT, or the reply to a COMMIT that did commit lost), handlers that
 * stall while the database clock ends their lease, and retention ended. Every answer is
 * checked against what committed (the `effects` table, written in the handler's transaction).
 * Long runs: ONCE_LIBRARY_SEARCH_RUNS, ONCE_LIBRARY_SEARCH_SEED (and _PATH to replay a shrunk case).
 */
const RUNS = Number(process.env.ONCE_LIBRARY_SEARCH_RUNS ?? 150);
// `npm run search -- --planted` names its seed ONCE_MODEL_SEED.
const SEED = process.env.ONCE_LIBRARY_SEARCH_SEED ?? process.env.ONCE_MODEL_SEED;
const PATH = process.env.ONCE_LIBRARY_SEARCH_PATH;
const LEASE_MS = 60_000;
// Far beyond the leases every round may end, so only `endRetention` ends a key's retention.
const TTL_MS = 24 * 3_600_000;

/** One operation per mode and key scope; the same names on every adapter that serves them. */
const OPERATIONS: Record<string, OperationPolicy> = {
  'orders.place': { mode: 'atomic', keyScope: 'principal' },
  'orders.share': { mode: 'atomic', keyScope: 'tenant' },
  'refunds.create': { mode: 'leased', keyScope: 'principal' },
  'refunds.team': { mode: 'leased', keyScope: 'tenant' },
};
const OPS = Object.keys(OPERATIONS);
// GraphQL resolvers commit through a recovery point (`exec.advance`), which atomic mode has not.
const LEASED_OPS = OPS.filter((op) => OPERATIONS[op]?.mode === 'leased');
const ADAPTERS = ['fetch', 'route', 'hono', 'trpc', 'action', 'graphql'] as const;
type Adapter = (typeof ADAPTERS)[number];
type Fault = 'none' | 'throw' | 'terminate' | 'reply-lost' | 'stall';
const FIELD: Record<string, string> = {
  'refunds.create': 'refundOne',
  'refunds.team': 'refundTeam',
};

interface Spec {
  adapter: Adapter;
  operation: string;
  key: string;
  tenant: string;
  principal: string;
  item: string;
  fault: Fault;
}
/**
 * A request as generated: a fresh one, or (`again`) one sent earlier in the run sent again,
 * through `spec.adapter` with `spec.fault`, varied in one way (`vary`): the same key from another
 * principal, tenant, body or operation.
 */
interface Drawn {
  spec: Spec;
  again: number | null;
  vary: 'none' | 'principal' | 'tenant' | 'item' | 'operation';
}
interface Round {
  first: Drawn[];
  /** Sent once the first batch is done or stalled (after the clock moved, if it did). */
  after: Drawn[];
  expireLeases: boolean;
  endRetention: boolean;
}
/** What a request got, whatever the transport: a payload (2xx), a refusal code, or neither. */
interface Answer {
  status: number;
  replayed: boolean;
  payload?: string;
  code?: string;
}
/** One request in flight: its spec and what the harness saw of its handler. */
interface Sent {
  id: string;
  spec: Spec;
  /** Its COMMIT was cut: the session terminated inside it, or the reply to it lost. */
  cut: boolean;
  arrive: () => void;
  arrived: Promise<void>;
  open: () => void;
  gate: Promise<void>;
  answer?: Answer;
}

type Tx = TransactionOf<IdempotencyTestDatabase['db']>;
let t: IdempotencyTestDatabase;
let clocked: postgres.Sql;
let db: IdempotencyTestDatabase['db'];
let clock: Awaited<ReturnType<typeof installDatabaseClock>>;
let send: (sent: Sent) => Promise<Answer>;
const live = new Map<string, Sent>();
/** What each execution produced (the payload text), by request id. */
const produced = new Map<string, string>();
let requests = 0;
const tally = new Map<string, number>();
/** What the store's failures were (the engine's `store_error` events), for a failure's message. */
const storeErrors: unknown[] = [];

beforeAll(async () => {
  t = await createIdempotencyTestDatabase('library_search');
  await t.sql`create table effects
    (req text primary key, tenant text, operation text, key text, hold boolean not null)`;
  // A deferred constraint trigger fires at COMMIT: a held row keeps its COMMIT running until the
  // session is terminated, so the fault lands inside the COMMIT itself.
  await t.sql.unsafe(`
    create function hold_commit() returns trigger language plpgsql
      as $$ begin perform pg_sleep(30); return null; end $$;
    create constraint trigger hold_commit after insert on effects deferrable initially deferred
      for each row when (new.hold) execute function hold_commit();`);
  clock = await installDatabaseClock(t.sql);
  // Opened after the clock: every statement's now() is the test's.
  clocked = postgres(t.url, { max: 12, onnotice: () => {} });
  db = drizzle(clocked);
  const idempotency = createIdempotency<Tx>({
    store: createDrizzleStore(db) as never,
    defaults: { leaseMs: LEASE_MS, ttlMs: TTL_MS },
    operations: OPERATIONS,
    onEvent: (event) => {
      if (event.type === 'store_error') storeErrors.push(event.error);
    },
  });
  send = adapters(idempotency);
});
afterAll(async () => {
  await clocked?.end({ timeout: 1 });
  await t?.drop();
});

const payloadOf = (sent: Sent) => {
  const { tenant, principal, operation, key, item } = sent.spec;
  return JSON.stringify({ req: sent.id, tenant, principal, operation, key, item });
};

/**
 * The handler every adapter runs: the effect and the key's completion in ONE transaction,
 * with the request's fault around its COMMIT. `complete` stores the answer its adapter's way.
 */
async function effect<T>(id: string, complete: (tx: Tx, payload: string) => Promise<T>) {
  const sent = live.get(id);
  if (!sent) throw new Error(`unknown request ${id}`);
  if (sent.spec.fault === 'stall') {
    sent.arrive();
    await sent.gate;
  }
  const hold = sent.spec.fault === 'terminate';
  const own = sent.spec.fault === 'reply-lost' || hold ? await ownDatabase(sent) : undefined;
  try {
    return await (own?.db ?? db).transaction(async (tx) => {
      const { tenant, operation, key } = sent.spec;
      await tx.execute(
        sql`insert into effects values (${id}, ${tenant}, ${operation}, ${key}, ${hold})`,
      );
      const payload = payloadOf(sent);
      produced.set(id, payload);
      if (sent.spec.fault === 'throw') throw new Error('the handler failed before completing');
      const result = await complete(tx as Tx, payload);
      if (hold) {
        const [row] = await tx.execute<{ pid: number }>(sql`select pg_backend_pid() as pid`);
        void terminateInCommit(sent, Number(row?.pid));
      }
      if (sent.spec.fault === 'reply-lost') own?.dropCommitReply();
      return result;
    });
  } finally {
    await own?.close();
  }
}

/**
 * Terminate the session once its COMMIT sleeps in the `hold_commit` trigger. Terminated before
 * COMMIT instead, the driver (postgres.js 3.4.9) would write the COMMIT to a closed socket and
 * crash on it, which says nothing about the library.
 */
async function terminateInCommit(sent: Sent, pid: number): Promise<void> {
  for (;;) {
    const [sleeping] = await t.sql`select 1 from pg_stat_activity
      where pid = ${pid} and wait_event = 'PgSleep'`;
    if (sleeping) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  sent.cut = true;
  // With a timeout, pg_terminate_backend returns once the backend has really exited.
  await t.sql`select pg_terminate_backend(${pid}::int, 5000)`;
}

/**
 * A connection of its own for a request whose COMMIT is cut, through a proxy that can let the
 * COMMIT through and drop its reply: the pool's sessions stay whole (a terminated session
 * fails whatever the driver pipelined behind its COMMIT, which is the driver's business).
 */
async function ownDatabase(sent: Sent) {
  const u = new URL(t.url);
  const proxy = await startTcpProxy(u.hostname, Number(u.port));
  const client = postgres(viaPort(t.url, proxy.port), { max: 1, onnotice: () => {} });
  return {
    db: drizzle(client),
    dropCommitReply() {
      proxy.dropNextCommitReply().then(() => {
        sent.cut = true;
      });
    },
    async close() {
      await client.end({ timeout: 0 }).catch(() => {});
      await proxy.close();
    },
  };
}

const header = (request: Request, name: string) => request.headers.get(name) ?? '';
const opOf = (request: Request) => new URL(request.url).pathname.split('/').pop() ?? '';

/** Every adapter over one engine, each answering through `send(sent)` as its clients see it. */
function adapters(idempotency: Idempotency<Tx>): (sent: Sent) => Promise<Answer> {
  const restHandler = (request: Request, exec: FetchExecution<Tx>) =>
    effect(header(request, 'x-req'), async (tx, payload) => {
      const response = new Response(payload, {
        status: 201,
        headers: { 'content-type': 'application/json' },
      });
      await exec.complete(tx, response);
      return response;
    });
  const http = fetchIdempotency(idempotency);
  const fetchRoute = async (request: Request) =>
    http.handle(
      request,
      {
        tenantId: header(request, 'x-tenant'),
        operation: opOf(request),
        principal: header(request, 'x-principal'),
        fingerprintInput: await request.clone().json(),
      },
      (exec) => restHandler(request, exec),
    );
  const nextRoute = idempotentRouteHandler((request, exec) => restHandler(request, exec), {
    idempotency,
    operation: opOf,
    getTenantId: (request) => header(request, 'x-tenant'),
    getPrincipal: (request) => header(request, 'x-principal'),
    getFingerprintInput: (request) => request.json(),
  });
  const hono = new Hono();
  // An app's own error page; Hono's default one logs every error it renders.
  hono.onError((_error, c) => c.text('Internal Server Error', 500));
  hono.post(
    '/:op',
    idempotencyMiddleware({
      idempotency,
      operation: (c) => c.req.param('op') ?? '',
      getTenantId: (c) => c.req.header('x-tenant') ?? '',
      getPrincipal: (c) => c.req.header('x-principal'),
      getFingerprintInput: (c) => c.req.json(),
    }),
    (c) => restHandler(c.req.raw, c.get('idempotency')),
  );
  const trpc = trpcRouter(idempotency);
  const yoga = graphqlServer(idempotency);
  const session = new AsyncLocalStorage<Sent>();
  const actions = new Map(
    OPS.map((operation) => [
      operation,
      idempotentAction(
        async (exec, _key: string, _input: { item: string }) =>
          effect(session.getStore()?.id ?? '', async (tx, payload) => {
            const data = JSON.parse(payload) as unknown;
            await exec.complete(tx, data);
            return data;
          }),
        {
          idempotency,
          operation,
          getTenantId: () => session.getStore()?.spec.tenant ?? '',
          getPrincipal: () => session.getStore()?.spec.principal,
          getKey: (key) => key,
          getFingerprintInput: (_key, input) => input,
        },
      ),
    ]),
  );

  return async (sent) => {
    const { adapter, operation, key, tenant, principal, item } = sent.spec;
    if (adapter === 'action') {
      const result = await session.run(sent, () => actions.get(operation)?.(key, { item }));
      if (!result) throw new Error(`no action for ${operation}`);
      return result.ok
        ? { status: 200, replayed: result.replayed, payload: JSON.stringify(result.data) }
        : { status: result.status, replayed: false, code: result.code };
    }
    const path =
      adapter === 'trpc'
        ? `/trpc/${operation}`
        : adapter === 'graphql'
          ? '/graphql'
          : `/${operation}`;
    const body =
      adapter === 'graphql'
        ? {
            query: `mutation($item: String!) { ${FIELD[operation]}(item: $item) }`,
            variables: { item },
          }
        : { item };
    const request = new Request(`http://app${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': key,
        'x-tenant': tenant,
        'x-principal': principal,
        'x-req': sent.id,
      },
      body: JSON.stringify(body),
    });
    const serve = {
      fetch: fetchRoute,
      route: (r: Request) => nextRoute(r, { params: Promise.resolve({}) }),
      hono: (r: Request) => hono.fetch(r),
      trpc,
      graphql: (r: Request) => yoga.fetch(r),
    }[adapter];
    return answerOf(adapter, await serve(request), operation);
  };
}

/** What a response says, in the terms the model checks. */
async function answerOf(adapter: Adapter, response: Response, operation: string): Promise<Answer> {
  const text = await response.text();
  const answer = {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
  };
  const json = (() => {
    try {
      return JSON.parse(text) as Record<string, never>;
    } catch {
      return undefined;
    }
  })();
  if (adapter === 'trpc') {
    const result = json?.result as { data?: unknown } | undefined;
    if (result) return { ...answer, payload: JSON.stringify(result.data) };
    const error = json?.error as { data?: { idempotency?: { code: string } } } | undefined;
    return { ...answer, code: error?.data?.idempotency?.code };
  }
  if (adapter === 'graphql') {
    const data = json?.data as Record<string, string | null> | undefined;
    const value = data?.[FIELD[operation] ?? ''];
    if (typeof value === 'string') return { ...answer, payload: value };
    const errors = json?.errors as { extensions?: { code?: string } }[] | undefined;
    return { ...answer, code: errors?.[0]?.extensions?.code };
  }
  if (response.status < 300) return { ...answer, payload: text };
  return { ...answer, code: (json as { code?: string } | undefined)?.code };
}

function trpcRouter(idempotency: Idempotency<Tx>) {
  type Context = { headers: Headers; resHeaders: Headers };
  const trpc = initTRPC
    .context<Context>()
    .meta<IdempotencyMeta>()
    .create({ errorFormatter: idempotencyErrorFormatter });
  const guard = createIdempotencyPlugin<Context, Tx>({
    idempotency,
    getTenantId: (ctx) => ctx.headers.get('x-tenant') ?? '',
    getPrincipal: (ctx) => ctx.headers.get('x-principal') ?? undefined,
    getRequestHeaders: (ctx) => ctx.headers,
    getResponseHeaders: (ctx) => ctx.resHeaders,
  });
  const procedure = (operation: string) =>
    trpc.procedure
      .meta({ idempotency: { operation } })
      .concat(guard)
      .input(z.object({ item: z.string() }))
      .mutation(({ ctx }) =>
        effect(ctx.headers.get('x-req') ?? '', async (tx, payload) => {
          const data = JSON.parse(payload) as unknown;
          await ctx.idempotency.complete(tx, data);
          return data;
        }),
      );
  // `orders.place` is the procedure `place` of the router `orders`: the same name as elsewhere.
  const router = trpc.router({
    orders: trpc.router({ place: procedure('orders.place'), share: procedure('orders.share') }),
    refunds: trpc.router({ create: procedure('refunds.create'), team: procedure('refunds.team') }),
  });
  return (request: Request) =>
    fetchRequestHandler({
      endpoint: '/trpc',
      req: request,
      router,
      createContext: ({ req, resHeaders }) => ({ headers: req.headers, resHeaders }),
    });
}

function graphqlServer(idempotency: Idempotency<Tx>) {
  type Context = GraphqlIdempotencyContext<Tx> & { request: Request } & Record<string, unknown>;
  // The documented leased pattern: the effect and a recovery point in one transaction; a retry
  // that finds the recovery point answers from it.
  const resolve = async (_: unknown, _args: unknown, ctx: Context) => {
    const exec = ctx.idempotency;
    if (exec.recoveryPoint === 'done') return exec.recoveryData;
    return effect(header(ctx.request, 'x-req'), async (tx, payload) => {
      await exec.advance(tx, 'done', payload);
      return payload;
    });
  };
  const schema = createSchema<Context>({
    typeDefs: /* GraphQL */ `
      ${idempotentDirectiveTypeDefs}
      type Query { ok: Boolean }
      type Mutation {
        ${LEASED_OPS.map((op) => `${FIELD[op]}(item: String!): String @idempotent(operation: "${op}")`).join('\n')}
      }
    `,
    resolvers: { Mutation: Object.fromEntries(LEASED_OPS.map((op) => [FIELD[op], resolve])) },
  });
  return createYoga<Context>({
    schema,
    logging: false,
    plugins: [
      // biome-ignore lint/correctness/useHookAtTopLevel: an Envelop plugin factory (Envelop names them use*), not a React hook
      useIdempotency<Context, Tx>({
        idempotency,
        getTenantId: (ctx) => header(ctx.request, 'x-tenant'),
        getPrincipal: (ctx) => header(ctx.request, 'x-principal'),
      }),
    ],
  });
}

/** Which requests one key answers as the same one: GraphQL fingerprints its field, the others the input. */
function identityOf(spec: Spec | undefined): string {
  if (!spec) return 'none';
  const transport = spec.adapter === 'graphql' ? 'graphql' : 'input';
  const who = OPERATIONS[spec.operation]?.keyScope === 'principal' ? spec.principal : '';
  return [spec.tenant, spec.operation, spec.key, transport, spec.item, who].join('|');
}
const scopeOf = (s: { tenant: string; operation: string; key: string }) =>
  `${s.tenant}|${s.operation}|${s.key}`;
const describeSpec = (s: Spec) =>
  `${s.adapter} ${s.operation} key=${s.key} ${s.tenant}/${s.principal} ${s.item}${s.fault === 'none' ? '' : ` fault=${s.fault}`}`;

/** What the run has sent, and the effects committed before retention last ended. */
interface Model {
  specs: Map<string, Spec>;
  before: Set<string>;
  /**
   * Whose answer each key scope last gave since retention ended: a leased key at a recovery
   * point outlives retention, and its resumed answer is an effect of before.
   */
  answeredBy: Map<string, string>;
}

function start(spec: Spec, model: Model): Sent {
  const id = `r${++requests}`;
  let arrive!: () => void;
  let open!: () => void;
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const sent: Sent = { id, spec, cut: false, arrive, arrived, open, gate };
  live.set(id, sent);
  model.specs.set(id, spec);
  return sent;
}

async function answer(sent: Sent): Promise<void> {
  try {
    sent.answer = await send(sent);
  } catch {
    sent.answer = { status: 500, replayed: false, code: 'thrown' };
  }
  const a = sent.answer;
  const kind =
    a.payload === undefined ? (a.code ?? `status ${a.status}`) : a.replayed ? 'replayed' : '2xx';
  tally.set(kind, (tally.get(kind) ?? 0) + 1);
}

async function committedEffects() {
  const rows = await t.sql<{ req: string; tenant: string; operation: string; key: string }[]>`
    select req, tenant, operation, key from effects`;
  return new Map(rows.map((row) => [row.req, row]));
}

/** The properties every answer of a round must hold, against what committed. */
async function check(batch: Sent[], model: Model): Promise<void> {
  const effects = await committedEffects();
  const byScope = new Map<string, string[]>();
  for (const [req, row] of effects) {
    if (model.before.has(req)) continue;
    byScope.set(scopeOf(row), [...(byScope.get(scopeOf(row)) ?? []), req]);
  }
  for (const [scope, reqs] of byScope)
    if (reqs.length > 1)
      throw new Error(`${scope}: the effect committed ${reqs.length} times (${reqs.join(', ')})`);
  for (const sent of batch) {
    const a = sent.answer;
    if (!a) throw new Error(`${sent.id} was never answered`);
    const what = `${sent.id} (${describeSpec(sent.spec)}) answered ${a.status} ${a.code ?? (a.replayed ? 'replayed' : '')}`;
    if (a.payload !== undefined) {
      const from = (JSON.parse(a.payload) as { req?: string }).req ?? '';
      if (!effects.has(from))
        throw new Error(`${what}: a 2xx for ${from}, whose effect did not commit`);
      if (produced.get(from) !== a.payload)
        throw new Error(`${what}: not byte for byte what ${from} answered: ${a.payload}`);
      if (identityOf(model.specs.get(from)) !== identityOf(sent.spec))
        throw new Error(
          `${what}: the answer of another request, ${from} (${identityOf(model.specs.get(from))})`,
        );
      model.answeredBy.set(scopeOf(sent.spec), from);
    }
    if (a.code === 'idempotency_store_unavailable' && effects.has(sent.id))
      throw new Error(`${what}: says nothing was executed, but its effect committed`);
    if (a.code === 'idempotency_outcome_unknown' && !sent.cut)
      throw new Error(`${what}: outcome unknown, but nothing cut its COMMIT`);
    if (sent.cut && a.code !== 'idempotency_outcome_unknown')
      throw new Error(
        `${what}: its COMMIT was cut (${effects.has(sent.id) ? 'committed' : 'not committed'}), yet it was not answered outcome unknown`,
      );
    if (sent.spec.fault === 'none' && a.payload === undefined && !CLEAN_REFUSALS.has(a.code ?? ''))
      throw new Error(
        `${what}: a request nothing went wrong for got neither its answer nor a refusal (store errors: ${storeErrors.slice(-3).map((e) => inspect(e, { depth: 4 }))})`,
      );
  }
}
const CLEAN_REFUSALS = new Set(['idempotency_key_in_use', 'idempotency_key_reused']);

/** One request alone, nothing else running: the model says exactly what it must get. */
async function playSolo(spec: Spec, model: Model): Promise<void> {
  const effects = await committedEffects();
  const [row] = await t.sql<{ state: string }[]>`select state from idempotency_keys
    where tenant_id = ${spec.tenant} and operation = ${spec.operation} and key = ${spec.key}`;
  const first =
    [...effects].find(([req, e]) => !model.before.has(req) && scopeOf(e) === scopeOf(spec))?.[0] ??
    model.answeredBy.get(scopeOf(spec));
  const sent = start(spec, model);
  await answer(sent);
  await check([sent], model);
  const a = sent.answer as Answer;
  const what = `${sent.id} (${describeSpec(spec)}) alone answered ${a.status} ${a.code ?? ''}`;
  if (first === undefined) {
    // Nothing committed under the key: it runs, unless an attempt of another request holds it.
    if (
      a.payload === undefined &&
      !(row?.state === 'in_progress' && a.code === 'idempotency_key_reused')
    )
      throw new Error(
        `${what}: nothing committed under its key (${row?.state ?? 'no row'}), yet it did not run`,
      );
  } else if (identityOf(model.specs.get(first)) === identityOf(spec)) {
    if (a.payload !== produced.get(first)) throw new Error(`${what}: not the replay of ${first}`);
  } else if (a.code !== 'idempotency_key_reused') {
    throw new Error(
      `${what}: ${first} (${identityOf(model.specs.get(first))}) holds the key: must be 422`,
    );
  }
}

/** A drawn request made concrete against what the run has sent so far (`history`). */
function resolve(drawn: Drawn, history: Spec[]): Spec {
  const base = drawn.again === null ? undefined : history[drawn.again % history.length];
  if (!base) return drawn.spec;
  const other = <T>(value: T, a: T, b: T) => (value === a ? b : a);
  const spec = { ...base, adapter: drawn.spec.adapter, fault: drawn.spec.fault };
  if (drawn.vary === 'principal') spec.principal = other(base.principal, 'p1', 'p2');
  if (drawn.vary === 'tenant') spec.tenant = other(base.tenant, 't1', 't2');
  if (drawn.vary === 'item') spec.item = other(base.item, 'book', 'lamp');
  if (drawn.vary === 'operation') spec.operation = drawn.spec.operation;
  // GraphQL serves the leased operations only.
  if (spec.adapter === 'graphql' && !LEASED_OPS.includes(spec.operation)) spec.adapter = 'trpc';
  return spec;
}

/** A round: the first batch at once; once it is done or stalled, the clock, then the second. */
async function play(round: Round, model: Model, history: Spec[]): Promise<Sent[]> {
  const sendAll = (drawn: Drawn[]) =>
    drawn.map((d) => {
      const spec = resolve(d, history);
      history.push(spec);
      return start(spec, model);
    });
  const first = sendAll(round.first);
  const answered = first.map(answer);
  await Promise.all(
    first.map((s, i) =>
      s.spec.fault === 'stall' ? Promise.race([s.arrived, answered[i]]) : answered[i],
    ),
  );
  if (round.expireLeases) await clock.pass(LEASE_MS + 1_000);
  const after = sendAll(round.after);
  await Promise.all(after.map(answer));
  for (const s of first) s.open();
  await Promise.all(answered);
  await check([...first, ...after], model);
  if (round.endRetention) {
    await clock.pass(TTL_MS + 1_000);
    model.before = new Set((await committedEffects()).keys());
    model.answeredBy.clear();
  }
  return [...first, ...after];
}

async function search(rounds: Round[]): Promise<void> {
  await t.sql`truncate idempotency_keys, effects`;
  live.clear();
  const model: Model = { specs: new Map(), before: new Set(), answeredBy: new Map() };
  const history: Spec[] = [];
  const sent: Sent[] = [];
  for (const round of rounds) {
    const [only] = round.first;
    if (
      only &&
      round.first.length === 1 &&
      round.after.length === 0 &&
      only.spec.fault === 'none'
    ) {
      const spec = resolve(only, history);
      history.push(spec);
      await playSolo(spec, model);
    } else sent.push(...(await play(round, model, history)));
  }
  // Afterwards, each request something went wrong for is retried alone: it gets what committed, once.
  for (const s of sent.filter((s) => s.spec.fault !== 'none'))
    await playSolo({ ...s.spec, fault: 'none' }, model);
}

const pick = <T>(...values: T[]) => fc.constantFrom(...values);
function drawnArb(faults: Fault[]): fc.Arbitrary<Drawn> {
  const fault = fc.oneof(
    { weight: 6, arbitrary: fc.constant<Fault>('none') },
    ...faults.map((f) => ({ weight: 1, arbitrary: fc.constant(f) })),
  );
  const spec = pick(...ADAPTERS).chain((adapter) =>
    fc.record({
      adapter: fc.constant(adapter),
      operation: pick(...(adapter === 'graphql' ? LEASED_OPS : OPS)),
      key: pick('k0', 'k0', 'k1'),
      tenant: pick('t1', 't1', 't2'),
      principal: pick('p1', 'p2'),
      item: pick('book', 'lamp'),
      fault,
    }),
  );
  return fc.record({
    spec,
    again: fc.option(fc.nat(50), { freq: 3 }),
    vary: pick('none', 'none', 'none', 'principal', 'tenant', 'item', 'operation'),
  });
}
const roundArb: fc.Arbitrary<Round> = fc.oneof(
  drawnArb([]).map((d) => ({ first: [d], after: [], expireLeases: false, endRetention: false })),
  fc.record({
    first: fc.array(drawnArb(['throw', 'terminate', 'reply-lost', 'stall', 'stall']), {
      minLength: 1,
      maxLength: 5,
    }),
    after: fc.array(drawnArb(['throw', 'terminate', 'reply-lost']), { maxLength: 3 }),
    expireLeases: fc.boolean(),
    endRetention: fc.nat(9).map((n) => n === 0),
  }),
);

describe('the library under every adapter at once (model-based, concurrent, faults)', () => {
  it('commits each key once; 2xx only for what committed; replays byte for byte to the same request; 409 outcome unknown exactly where a COMMIT was cut', async () => {
    await fc.assert(fc.asyncProperty(fc.array(roundArb, { minLength: 1, maxLength: 6 }), search), {
      numRuns: RUNS,
      ...(SEED ? { seed: Number(SEED) } : {}),
      ...(PATH ? { path: PATH } : {}),
      // fast-check prints a counterexample's seed and path: ONCE_LIBRARY_SEARCH_SEED / _PATH replay it.
    });
    console.log(
      `library search: ${RUNS} runs, ${requests} requests, answers ${JSON.stringify(Object.fromEntries(tally))}`,
    );
  }, 600_000);
});
