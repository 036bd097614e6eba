import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from './random.ts';

/**
 * The faults the proxy injects, for the target and for a downstream: an answer dropped after
 * the upstream committed, a copy at once or later, a delay, a reset before forwarding.
 */
const FAULT_KINDS = [
  'drop_answer',
  'duplicate_at_once',
  'duplicate_late',
  'delay',
  'reset',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * One request the black-box fault proxy sent upstream, and its answer (`status: null`: none
 * came), including answers it then dropped and copies it sent on its own.
 */
export interface UpstreamAttempt {
  key: string | null;
  /** SHA-256 of the request body: two attempts with one key and two digests reuse the key. */
  bodyDigest: string;
  /** Why it was sent: the client's request, or a copy the proxy made. */
  origin: 'client' | 'duplicate_at_once' | 'duplicate_late';
  startedAt: number;
  endedAt: number;
  status: number | null;
  contentType: string | null;
  replayed: boolean;
  body: string;
  /** Whether the client was given this answer (false when the proxy dropped it). */
  delivered: boolean;
}

/** The chance of each fault per request; what is left over is a clean pass. */
export type FaultMix = Partial<Record<FaultKind, number>>;

export const DEFAULT_FAULT_MIX: FaultMix = {
  drop_answer: 0.15,
  duplicate_at_once: 0.15,
  duplicate_late: 0.05,
  delay: 0.1,
  reset: 0.05,
};

export interface FaultProxyOptions {
  /** Base URL of the API behind the proxy. */
  upstream: string;
  seed: number;
  mix?: FaultMix;
  /** Port to listen on (0: any free one). */
  port?: number;
  /**
   * Stripped from keys (and from the bodies of requests without a key that holds it) before
   * drawing, so one seed draws the same faults in every run.
   */
  keyPrefix?: string;
}

/** The longest `delay`, and the latest `duplicate_late` copy. */
const MAX_DELAY_MS = 300;

/**
 * An HTTP proxy that injects seeded faults in front of an API taking `Idempotency-Key`: each
 * request's fault is drawn from the seed, its key (else its body) and how often it was seen,
 * so a seed replays the same faults for the same keys, whatever order they come in.
 */
export async function startFaultProxy(options: FaultProxyOptions) {
  const upstream = new URL(options.upstream);
  let mix = options.mix ?? DEFAULT_FAULT_MIX;
  const attempts: UpstreamAttempt[] = [];
  const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<
    FaultKind,
    number
  >;
  const seen = new Map<string, number>();
  const pending = new Set<Promise<unknown>>();
  const agent = new http.Agent({ keepAlive: true });

  const track = <T>(promise: Promise<T>): Promise<T> => {
    pending.add(promise);
    void promise.finally(() => pending.delete(promise));
    return promise;
  };

  const forward = (
    request: http.IncomingMessage,
    body: Buffer,
    origin: UpstreamAttempt['origin'],
  ): Promise<{ attempt: UpstreamAttempt; headers: http.IncomingHttpHeaders }> =>
    new Promise((resolve) => {
      const key = headerOf(request.headers, 'idempotency-key');
      const startedAt = Date.now();
      const finish = (
        status: number | null,
        headers: http.IncomingHttpHeaders,
        text: string,
      ): void => {
        const attempt: UpstreamAttempt = {
          key,
          bodyDigest: createHash('sha256').update(body).digest('hex'),
          origin,
          startedAt,
          endedAt: Date.now(),
          status,
          contentType: headerOf(headers, 'content-type'),
          replayed: headerOf(headers, 'idempotent-replayed')?.toLowerCase() === 'true',
          body: text,
          delivered: false,
        };
        attempts.push(attempt);
        resolve({ attempt, headers });
      };
      const outgoing = http.request(
        {
          protocol: upstream.protocol,
          hostname: upstream.hostname,
          port: upstream.port,
          method: request.method,
          path: request.url,
          headers: { ...request.headers, host: upstream.host },
          agent,
        },
        (response) =>
          readBody(response).then(
            (text) => finish(response.statusCode ?? null, response.headers, text.toString()),
            () => finish(null, {}, ''),
          ),
      );
      outgoing.on('error', () => finish(null, {}, ''));
      outgoing.end(body);
    });

  const server = http.createServer(async (request, response) => {
    const body = await readBody(request);
    const key = headerOf(request.headers, 'idempotency-key');
    const prefix = options.keyPrefix ?? '';
    // A key made from the run's (a target's own downstream key) names the request; any other
    // is drawn by its body: none, or one no seed replays (the Stripe SDK keys every POST with
    // a random uuid of its own when the target passes none).
    const name = key?.includes(prefix)
      ? key.replace(prefix, '')
      : `body-${createHash('sha256').update(body.toString().replaceAll(prefix, '')).digest('hex')}`;
    const visit = (seen.get(name) ?? 0) + 1;
    seen.set(name, visit);
    const random = seededRandom(options.seed, `${name}#${visit}`);
    // Only writes are faulted: reads pass through.
    const fault = request.method === 'POST' ? drawFault(mix, random()) : null;
    if (fault) faults[fault]++;

    if (fault === 'reset') {
      request.socket.destroy();
      return;
    }
    if (fault === 'delay') await sleep(Math.round(random() * MAX_DELAY_MS));

    const original = track(forward(request, body, 'client'));
    if (fault === 'duplicate_at_once') void track(forward(request, body, 'duplicate_at_once'));
    if (fault === 'duplicate_late') {
      const wait = Math.round(random() * MAX_DELAY_MS);
      void track(sleep(wait).then(() => forward(request, body, 'duplicate_late')));
    }
    const { attempt, headers } = await original;
    if (fault === 'drop_answer' || attempt.status === null) {
      request.socket.destroy();
      return;
    }
    attempt.delivered = true;
    response.writeHead(attempt.status, passHeaders(headers));
    response.end(attempt.body);
  });

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    // Every request sent upstream, in the order they ended, and each fault's count.
    attempts,
    faults,
    // Injects nothing more: requests pass through.
    calm() {
      mix = {};
    },
    // Waits for late copies still to be sent and answered.
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

function drawFault(mix: FaultMix, draw: number): FaultKind | null {
  let edge = 0;
  for (const kind of FAULT_KINDS) {
    edge += mix[kind] ?? 0;
    if (draw < edge) return kind;
  }
  return null;
}

function headerOf(headers: http.IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/** Hop-by-hop headers belong to one connection, not to the answer being passed on. */
function passHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const {
    connection: _c,
    'keep-alive': _k,
    'transfer-encoding': _t,
    'content-length': _l,
    ...rest
  } = headers;
  return rest;
}

async function readBody(message: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
