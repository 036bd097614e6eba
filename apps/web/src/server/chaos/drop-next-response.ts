import type { IncomingMessage, ServerResponse } from 'node:http';
import { CHAOS_DROP_COOKIE_NAME } from '../../demo/chaos-switchboard.ts';

/**
 * The demo's "drop the next response to this browser": `ops.chaosPress` arms a one-shot
 * token (also set as the browser's `once_chaos_drop` cookie); the web's HTTP server sees that
 * cookie on the browser's next `checkout.pay`, lets the request run and commit, and closes
 * the connection at the moment the answer would be written. The browser sees a broken
 * connection, like a response lost in the network.
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
 * `checkout.pay` from an armed browser, disarms it and closes the connection when the answer
 * would be written (a truncated status line, then FIN): the procedure has run and committed
 * by then, and the client sees a broken response, never the answer.
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
  const send = socket.write.bind(socket);
  let cut = false;
  const cutInstead = () => {
    if (cut) return;
    cut = true;
    console.log('web: chaos: dropping the answer to checkout.pay (it ran and committed)');
    // A few bytes of a status line, then close. Not nothing: a browser silently resends a
    // request whose reused keep-alive connection closed before any byte came back (Chromium
    // does, even for POST), and the page would never see the loss.
    send('HTTP/1.1 ');
    socket.end();
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
  socket.write = ((..._args: unknown[]) => {
    cutInstead();
    return false;
  }) as typeof socket.write;
  // Headers alone can go out through flushHeaders before any write: cut there too.
  res.flushHeaders = cutInstead;
  return true;
}
