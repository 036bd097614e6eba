import { connect, createServer, type Socket } from 'node:net';

/** What the clients behind a {@link WireCounter} asked of PostgreSQL, read off the wire. */
interface WireCounts {
  /** Flights the client sent while no answer was pending: each one a wait for the server. */
  roundTrips: number;
  /** Statements executed (simple queries and extended-protocol executes), in order of sending, whitespace collapsed. */
  statements: string[];
  /** Transactions the statements commit: each COMMIT, and each write sent outside a transaction block. */
  commits: number;
  /** Connections opened (each pays its start-up round trips). */
  connections: number;
}

export interface WireCounter {
  readonly port: number;
  /** The counts since the last `reset()`. */
  read(): WireCounts;
  reset(): void;
  close(): Promise<void>;
}

const SSL_OR_GSS_REQUEST = new Set([80877103, 80877104]);
const WRITE = /\b(insert|update|delete|merge)\b/i;

/**
 * A TCP proxy in front of PostgreSQL that parses the frontend protocol of every connection
 * through it: the driver's statements, round trips and commits counted where they happen,
 * whatever library or route sent them.
 */
export async function startWireCounter(upstreamPort: number): Promise<WireCounter> {
  let counts = empty();
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    counts.connections++;
    const upstream = connect(upstreamPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
      socket.on('error', () => {});
    }
    const frontend = frontendParser((statement) => {
      counts.statements.push(statement);
      if (/^(begin|start transaction)\b/i.test(statement)) inTransaction = true;
      else if (/^(commit|end)\b/i.test(statement)) {
        counts.commits++;
        inTransaction = false;
      } else if (/^rollback\b/i.test(statement)) inTransaction = false;
      else if (!inTransaction && WRITE.test(statement)) counts.commits++;
    });
    let inTransaction = false;
    let waiting = false;
    client.on('data', (chunk: Buffer) => {
      if (!waiting) counts.roundTrips++;
      waiting = true;
      frontend(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      waiting = false;
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    read: () => ({ ...counts, statements: [...counts.statements] }),
    reset() {
      counts = empty();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function empty(): WireCounts {
  return { roundTrips: 0, statements: [], commits: 0, connections: 0 };
}

/**
 * Splits a connection's client-to-server bytes into messages (the start-up message has no
 * type byte) and reports each executed statement: a simple query's text, or the text a
 * named or unnamed prepared statement was parsed with when a portal bound to it executes.
 */
function frontendParser(onStatement: (text: string) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let untyped = true;
  const parsed = new Map<string, string>();
  let bound = '';
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    for (;;) {
      const header = untyped ? 0 : 1;
      if (pending.length < header + 4) return;
      const length = pending.readInt32BE(header);
      if (pending.length < header + length) return;
      const type = untyped ? '' : String.fromCharCode(pending[0]!);
      const body = pending.subarray(header + 4, header + length);
      pending = pending.subarray(header + length);
      if (untyped) {
        untyped = SSL_OR_GSS_REQUEST.has(body.readInt32BE(0));
        continue;
      }
      const strings = () => body.toString('utf8').split('\0');
      if (type === 'Q') onStatement(collapse(strings()[0]!));
      else if (type === 'P') {
        const [name, text] = strings();
        parsed.set(name!, collapse(text!));
      } else if (type === 'B') bound = parsed.get(strings()[1]!) ?? '';
      else if (type === 'E') onStatement(bound);
    }
  };
}

const collapse = (text: string) => text.replace(/\s+/g, ' ').trim();
