import type { IncomingMessage, ServerResponse } from 'node:http';
import { CHAOS_DROP_COOKIE_NAME } from '../../demo/chaos-switchboard.ts';

/**
 * The demo's "drop the next response to this browser": a one-shot token, also the browser's
 * cookie, lets its next `checkout.pay` run and commit, then closes the connection instead of
 * answering. The tokens live on `globalThis` because the server and Next's bundle load this
 * module separately in one process.
 */
const REGISTRY = Symbol.for('once.chaos.dropNextResponse');

function armedTokens(): Set<string> {
  const holder = globalThis as typeof globalThis & { [REGISTRY]?: Set<string> };
  holder[REGISTRY] ??= new Set();
  return holder[REGISTRY];
}

/** Arms one drop for the browser that carries `token`. */
export function armDropNextResponse(token: string): void {
  armedTokens().add(token);
}

function dropTokenOf(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === CHAOS_DROP_COOKIE_NAME) return rest.join('=');
  }
  return undefined;
}

/**
 * For every request before Next: a `checkout.pay` from an armed browser is disarmed and its
 * connection closed when the answer would be written (it ran and committed by then).
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
