import { randomUUID } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moneyActionRequests } from './testing/money-action-requests.ts';
import { startWebTestServer, type WebTestServer } from './testing/web-test-server.ts';

// A money action whose connection is lost while its COMMIT is in flight may have committed:
// its answer must be 409 idempotency_outcome_unknown (retry with the SAME key) on every
// transport, never 503 "nothing was executed", which invites a retry under a new key: a second
// refund. The retry with the same key gets the refund that committed, or makes it once.

/**
 * A TCP proxy in front of PostgreSQL that cuts, once armed with a text, the first connection
 * that sends the text (a query parameter such as a payment id) at its next COMMIT: after the
 * server answered it (`committed`) or before the server gets it (`rolled back`).
 */
function startCommitCutter() {
  const sockets = new Set<Socket>();
  let upstream = { host: '127.0.0.1', port: 0 };
  let armed: { marker: string; deliver: boolean; cut: () => void } | undefined;
  // A COMMIT's text, and the names of the statements postgres.js prepared with it (it then
  // sends a Bind of that name): the text is between a length or name byte and a NUL.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: wire protocol bytes are control characters.
  const commitText = /([^\x00]*)\x00commit\s*;?\x00/gi;
  const commitNames = new Set<string>();
  const isCommit = (text: string) => {
    let commit = false;
    for (const [, name] of text.matchAll(commitText)) {
      // After the length's last byte: a named Parse's name (none for a simple query).
      if (name!.length > 1) commitNames.add(name!.slice(1));
      commit = true;
    }
    return commit || [...commitNames].some((name) => text.includes(`\x00${name}\x00`));
  };
  const server: Server = createServer((client) => {
    const server = connect(upstream.port, upstream.host);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        server.destroy();
      });
    }
    let marked: typeof armed;
    let cutAtReply: (() => void) | undefined;
    client.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      if (armed && text.includes(armed.marker)) [marked, armed] = [armed, undefined];
      if (isCommit(text) && marked) {
        const { deliver, cut } = marked;
        marked = undefined;
        if (!deliver) {
          client.destroy();
          return cut();
        }
        cutAtReply = cut;
      }
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (!cutAtReply) return void client.write(chunk);
      // The server answered the COMMIT: it is durable; the web never hears of it.
      client.destroy();
      cutAtReply();
      cutAtReply = undefined;
    });
  });
  return {
    listening: new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)),
    /** The runtime's database URL, through the proxy. */
    via(url: string): string {
      const u = new URL(url);
      upstream = { host: u.hostname, port: Number(u.port) };
      u.hostname = '127.0.0.1';
      u.port = String((server.address() as { port: number }).port);
      return u.toString();
    },
    /** Resolves once the cut happened. */
    arm(marker: string, deliver: boolean): Promise<void> {
      return new Promise((cut) => {
        armed = { marker, deliver, cut };
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('a money action whose connection is lost while its COMMIT is in flight', () => {
  let web: WebTestServer;
  const cutter = startCommitCutter();
  const auth = { authorization: 'Bearer once_test_tenant_a' };

  beforeAll(async () => {
    await cutter.listening;
    web = await startWebTestServer(
      'web_money_action_commit_cut',
      {
        SESSION_SECRET: 'money-action-commit-cut-secret-01',
        ONCE_IDEMPOTENCY_MAX_NEW_KEYS_PER_MINUTE: '0',
      },
      cutter.via,
    );
  });
  afterAll(async () => {
    await web?.close();
    await cutter.close();
  });
  const sql = () => web.database.client.sql;

  const { post, succeededPayment, refundBy } = moneyActionRequests(() => web, auth);

  /** A checkout of one book: its HTTP status and its payment id, else its code. */
  const payBy = {
    rest: async (key: string, customerEmail: string) => {
      const lines = [{ productId: 'book_sre', quantity: 1 }];
      const answer = await post('/api/v1/payments', key, { lines, customerEmail });
      const body = await answer.json();
      return { status: answer.status, seen: body.paymentId ?? body.code };
    },
    graphql: async (key: string, customerEmail: string) => {
      const answer = await post('/api/graphql', key, {
        query: 'mutation ($input: PayInput!) { pay(input: $input) { paymentId } }',
        variables: { input: { lines: [{ productId: 'book_sre', quantity: 1 }], customerEmail } },
      });
      const body = await answer.json();
      return {
        status: answer.status,
        seen: body.data?.pay?.paymentId ?? body.errors?.[0]?.extensions?.code,
      };
    },
  };

  describe.each(['rest', 'graphql'] as const)('%s pay', (transport) => {
    it.each([
      ['the server committed it', true],
      ['it never reached the server', false],
    ])(
      'COMMIT cut (%s): 409 outcome unknown; the retry with the same key pays once',
      async (_case, delivered) => {
        const email = `cut-${randomUUID()}@example.com`;
        const key = randomUUID();
        const cut = cutter.arm(email, delivered);
        const first = await payBy[transport](key, email);
        await cut;
        expect(first).toMatchObject({ status: 409, seen: 'idempotency_outcome_unknown' });
        let retried = await payBy[transport](key, email);
        for (let i = 0; i < 50 && retried.seen === 'idempotency_key_in_use'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          retried = await payBy[transport](key, email);
        }
        expect(retried.seen).toMatch(/^pay_/);
        const [payments] = await sql()<{ n: number }[]>`
        select count(*)::int as n from payments where customer_email = ${email}`;
        expect(payments?.n).toBe(1);
      },
    );
  });

  describe.each(['rest', 'graphql', 'trpc'] as const)('%s', (transport) => {
    it.each([
      ['the server committed it', true],
      ['it never reached the server', false],
    ])(
      'COMMIT cut (%s): 409 outcome unknown, never "nothing was executed"; the retry with the same key refunds once',
      async (_case, delivered) => {
        const paymentId = await succeededPayment();
        const key = randomUUID();
        const cut = cutter.arm(paymentId, delivered);
        const first = await refundBy[transport](paymentId, key);
        await cut;
        expect(first).toMatchObject({ status: 409, seen: 'idempotency_outcome_unknown' });
        const [committed] = await sql()<{ n: number }[]>`
        select count(*)::int as n from refunds where payment_id = ${paymentId}`;
        expect(committed?.n).toBe(delivered ? 1 : 0);

        let retried = await refundBy[transport](paymentId, key);
        // Only while the cut request is still settling its key.
        for (let i = 0; i < 50 && retried.seen === 'idempotency_key_in_use'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          retried = await refundBy[transport](paymentId, key);
        }
        expect(retried.seen).toMatch(/^rf_/);
        expect(await refundBy[transport](paymentId, key)).toEqual(retried);
        // What the worker sends to the processor: one refund, one job.
        const [refunds] = await sql()<{ n: number; jobs: number }[]>`
        select (select count(*)::int from refunds where payment_id = ${paymentId}) as n,
               (select count(*)::int from outbox_jobs
                 where payment_id = ${paymentId} and kind = 'refund_payment') as jobs`;
        expect(refunds).toEqual({ n: 1, jobs: 1 });
      },
    );
  });
});
