// An outside-style checkout service, written the way teams often write one: plain node:http,
// SQL through postgres.js, its own idempotency table, the official Stripe SDK. It does NOT use
// @once/idempotency: it is what the chaos kit is pointed at. Each SHOP_BUG_* switch plants a
// bug teams really ship; with every switch off it follows the IETF draft and Stripe's replay.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import Stripe from 'stripe';

export interface ShopBugs {
  /** SELECT the key, then INSERT (an upsert) in a second statement: two requests both pass. */
  checkThenAct?: boolean;
  /** The key row is written only after the charge succeeded: nothing guards a key in flight. */
  keyOnSuccessOnly?: boolean;
  /** A finished key runs the checkout again instead of replaying the stored answer. */
  noReplay?: boolean;
  /** The charge goes to the processor without an Idempotency-Key of the shop's own. */
  noDownstreamKey?: boolean;
  /**
   * The processor's Idempotency-Key hashes the order with when it was sent: every retry is a
   * new key, and a second charge (adyen-commercetools #1305).
   */
  volatileKey?: boolean;
}

/** The switches from the environment: `SHOP_BUG_CHECK_THEN_ACT=1` and so on. */
export function bugsFromEnv(env: NodeJS.ProcessEnv = process.env): ShopBugs {
  return {
    checkThenAct: env.SHOP_BUG_CHECK_THEN_ACT === '1',
    keyOnSuccessOnly: env.SHOP_BUG_KEY_ON_SUCCESS_ONLY === '1',
    noReplay: env.SHOP_BUG_NO_REPLAY === '1',
    noDownstreamKey: env.SHOP_BUG_NO_DOWNSTREAM_KEY === '1',
    volatileKey: env.SHOP_BUG_VOLATILE_KEY === '1',
  };
}

export interface ShopOptions {
  databaseUrl: string;
  /** Where the Stripe SDK sends (the real API, our mock processor, or a fault proxy). */
  stripeUrl: string;
  stripeSecretKey: string;
  bugs?: ShopBugs;
  port?: number;
}

interface KeyRow {
  request_hash: string;
  status: 'started' | 'done';
  response_status: number | null;
  response_body: string | null;
}

const PROBLEM = 'application/problem+json';

export async function startShop(options: ShopOptions) {
  const bugs = options.bugs ?? {};
  const sql = postgres(options.databaseUrl, { max: 10, onnotice: () => {} });
  await sql`create table if not exists idempotency_keys (
    key text primary key, request_hash text not null, status text not null,
    response_status int, response_body text, created_at timestamptz not null default now())`;
  await sql`create table if not exists orders (
    id serial primary key, checkout_key text not null, payment_intent text not null,
    amount int not null)`;
  const url = new URL(options.stripeUrl);
  const stripe = new Stripe(options.stripeSecretKey, {
    host: url.hostname,
    port: Number(url.port),
    protocol: url.protocol === 'https:' ? 'https' : 'http',
    // The client retries the whole checkout with its key; the shop does not retry inside.
    maxNetworkRetries: 0,
    timeout: 10_000,
  });

  const problem = (status: number, type: string, title: string, extra = {}) => ({
    status,
    headers: { 'content-type': PROBLEM, ...extra },
    body: JSON.stringify({ type: `https://shop.example/problems/${type}`, title, status }),
  });

  const charge = async (key: string, input: { amount: number; currency: string }) => {
    const intent = await stripe.paymentIntents.create(
      {
        amount: input.amount,
        currency: input.currency,
        payment_method: 'pm_card_visa',
        confirm: true,
        metadata: { checkout_key: key },
      },
      bugs.noDownstreamKey ? {} : { idempotencyKey: downstreamKey(key, input) },
    );
    const [order] = await sql<{ id: number }[]>`
      insert into orders (checkout_key, payment_intent, amount)
      values (${key}, ${intent.id}, ${input.amount}) returning id`;
    return {
      status: 201,
      body: JSON.stringify({ order: order!.id, payment_intent: intent.id, status: intent.status }),
    };
  };

  const downstreamKey = (key: string, input: { amount: number; currency: string }) =>
    bugs.volatileKey
      ? createHash('sha256')
          .update(JSON.stringify({ ...input, sentAt: new Date().toISOString() }))
          .digest('hex')
      : `shop-checkout-${key}`;

  const checkout = async (key: string | null, raw: string) => {
    if (!key) return problem(400, 'idempotency-key-missing', 'Idempotency-Key is required');
    let input: { amount: number; currency: string };
    try {
      input = JSON.parse(raw);
    } catch {
      return problem(400, 'invalid-body', 'Body must be JSON');
    }
    const hash = createHash('sha256').update(raw).digest('hex');

    const [existing] = await sql<KeyRow[]>`select * from idempotency_keys where key = ${key}`;
    if (existing) {
      if (existing.request_hash !== hash) {
        return problem(422, 'idempotency-key-reused', 'Key reused with another request');
      }
      if (existing.status === 'started') {
        return problem(409, 'idempotency-key-in-use', 'Request in progress', {
          'retry-after': '1',
        });
      }
      if (!bugs.noReplay) {
        return {
          status: existing.response_status!,
          headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' },
          body: existing.response_body!,
        };
      }
      // The bug: the key is "known", and the checkout simply runs again.
    } else if (!bugs.keyOnSuccessOnly) {
      // The bug's window, as wide as real code makes it (a lookup, a log line between check and act).
      if (bugs.checkThenAct) await new Promise((resolve) => setTimeout(resolve, 50));
      const claimed = bugs.checkThenAct
        ? await sql`insert into idempotency_keys (key, request_hash, status)
            values (${key}, ${hash}, 'started')
            on conflict (key) do update set status = 'started' returning key`
        : await sql`insert into idempotency_keys (key, request_hash, status)
            values (${key}, ${hash}, 'started') on conflict do nothing returning key`;
      if (claimed.length === 0) {
        // Another request claimed the key between our read and our insert.
        return problem(409, 'idempotency-key-in-use', 'Request in progress', {
          'retry-after': '1',
        });
      }
    }

    let answer: { status: number; body: string };
    try {
      answer = await charge(key, input);
    } catch (error) {
      // Nothing is stored for a failed attempt: the client retries with the same key, and the
      // processor replays the charge if it happened (the downstream key is the same).
      if (!bugs.keyOnSuccessOnly) await sql`delete from idempotency_keys where key = ${key}`;
      const message = error instanceof Error ? error.message : String(error);
      console.error(`checkout ${key}: processor: ${message}`);
      return problem(503, 'processor-unavailable', `Payment processor: ${message}`, {
        'retry-after': '1',
      });
    }
    await sql`insert into idempotency_keys (key, request_hash, status, response_status, response_body)
      values (${key}, ${hash}, 'done', ${answer.status}, ${answer.body})
      on conflict (key) do update set status = 'done', response_status = excluded.response_status,
        response_body = excluded.response_body`;
    return { ...answer, headers: { 'content-type': 'application/json' } };
  };

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    try {
      if (request.method !== 'POST' || request.url !== '/checkout') {
        response.writeHead(404).end();
        return;
      }
      const key = request.headers['idempotency-key'];
      const answer = await checkout(
        typeof key === 'string' ? key : null,
        Buffer.concat(chunks).toString(),
      );
      response.writeHead(answer.status, answer.headers).end(answer.body);
    } catch (error) {
      console.error(error);
      response.writeHead(500).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await sql.end();
    },
  };
}
