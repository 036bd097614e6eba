import type { IncomingMessage, ServerResponse } from 'node:http';
import { CHAOS_DROP_COOKIE_NAME } from '@once/api';

/**
 * The demo's "drop the next response to this browser": `ops.chaosPress` arms a one-shot
 * token (also set as the browser's `once_chaos_drop` cookie); the web's HTTP server sees that
 * cookie on the browser's next `checkout.pay`, lets the request run and commit, and closes
 * the connection at the moment the answer would be written. The browser sees a connection
 * reset, exactly like a response lost in the network.
 *
 * The tokens live on `globalThis` because the server (`src/process/main.ts`) and the route
 * handlers (Next's bundle) load this module separately in one process. The server installs
 * the hook only when the launcher enabled the switches; otherwise nothing here runs.
 */
const REGISTRY = Symbol.for('once.chaos.dropNextResponse');

function armedTokens(): Set<string> {
  const holder = globalThis as typeof globalThis & { [REGISTRY]?: Set<string> };
  holder[REGISTRY] ??= new Set();
  return holder[REGISTRY];
}

/**
 * Arms one drop for the browser that carries `token`.
 *
 * @example
 * armDropNextResponse('3f9c...'); // and Set-Cookie: once_chaos_drop=3f9c...
 */
export function armDropNextResponse(token: string): void {
  armedTokens().add(token);
}

/** The `once_chaos_drop` token of a Cookie header, if any. */
function dropTokenOf(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === CHAOS_DROP_COOKIE_NAME) return rest.join('=');
  }
  return undefined;
}

/**
 * Called by the HTTP server for every request before Next handles it. If this is a
 * `checkout.pay` from an armed browser, disarms it and destroys the socket on the first byte
 * of the answer: the procedure has run and committed by then.
 *
 * @example
 * createServer((req, res) => { dropArmedPayResponse(req, res); void handle(req, res); });
 */
export function dropArmedPayResponse(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'POST' || !req.url?.startsWith('/api/trpc/checkout.pay')) return false;
  const token = dropTokenOf(req.headers.cookie);
  const armed = armedTokens();
  if (!token || !armed.delete(token)) return false;
  const socket = req.socket;
  const cut = (() => {
    console.log('web: chaos: dropping the answer to checkout.pay (it ran and committed)');
    socket.destroy();
    return false;
  }) as typeof socket.write;
  socket.write = cut;
  // Headers alone can go out through writeHead/flushHeaders before any write: cut there too.
  res.flushHeaders = () => void socket.destroy();
  return true;
}
