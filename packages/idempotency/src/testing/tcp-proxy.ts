import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of Postgres for fault injection in tests:
 * - `blackhole`: accept connections and never answer (a hung database);
 * - `dropReplyToCommit`: forward a COMMIT to the server, let it commit, then cut the client
 *   connection before the server's reply reaches it (the "lost COMMIT reply").
 */
export interface TcpProxy {
  port: number;
  mode: 'forward' | 'blackhole';
  /** Cut the connection that sends the next COMMIT right after the server answers it. */
  dropNextCommitReply(): Promise<void>;
  close(): Promise<void>;
}

// The statement text sits between a length/name byte and its NUL terminator.
// biome-ignore lint/suspicious/noControlCharactersInRegex: wire protocol bytes are control characters.
const COMMIT_MESSAGE = /[\x00-\x1f]commit\s*;?\x00/i;

export async function startTcpProxy(upstreamHost: string, upstreamPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let dropArmed: (() => void) | undefined;
  const proxy: TcpProxy = {
    port: 0,
    mode: 'forward',
    dropNextCommitReply() {
      return new Promise((resolve) => {
        dropArmed = resolve;
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    if (proxy.mode === 'blackhole') return; // read nothing, answer nothing
    const upstream = connect(upstreamPort, upstreamHost);
    sockets.add(upstream);
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    let cutOnNextReply: (() => void) | undefined;
    client.on('data', (chunk) => {
      // A simple-query 'Q' or extended-protocol 'P' message whose whole text is COMMIT.
      if (dropArmed && COMMIT_MESSAGE.test(chunk.toString('latin1'))) {
        cutOnNextReply = dropArmed;
        dropArmed = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutOnNextReply) {
        // The server has answered the COMMIT: it is durable. The client never hears about it.
        const done = cutOnNextReply;
        cutOnNextReply = undefined;
        client.destroy();
        upstream.destroy();
        done();
        return;
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  proxy.port = typeof address === 'object' && address ? address.port : 0;
  return proxy;
}

/** Replace host and port of a Postgres URL (to go through a proxy or to a closed port). */
export function viaPort(url: string, port: number, host = '127.0.0.1'): string {
  const u = new URL(url);
  u.hostname = host;
  u.port = String(port);
  return u.toString();
}
