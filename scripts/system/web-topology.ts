import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { writePgBouncerConfig } from '@once/postgres/testing';
import type { ProcessSpec } from './supervisor.ts';

/** Debian's HAProxy (2.6 on bookworm): `apt-get install haproxy`. */
const HAPROXY = '/usr/sbin/haproxy';

/**
 * What the proxy sends again to another web. `connect`: only a request no web received
 * (HAProxy's default, `retry-on conn-failure`). `resend`: also one a web received and then
 * died on or failed (`all-retryable-errors`: no or a broken answer, a timeout, a 5xx), a POST
 * included: HAProxy does not look at the method, so the second web meets the first one's key.
 */
export type ProxyRetry = 'connect' | 'resend';

/** Where the generated configurations live (and the proxy's admin socket); removed at stop. */
export function topologyDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'once-topology-'));
}

export interface ProxyOptions {
  dir: string;
  /** The public address: the one URL the banner prints and the browser uses. */
  host: string;
  port: number;
  /** Each web's name and loopback port. */
  webs: { name: string; port: number }[];
  retry: ProxyRetry;
}

/** HAProxy in front of the webs: round robin, a health check per web, the client's address forwarded. */
export function proxySpec(options: ProxyOptions): ProcessSpec {
  const file = path.join(options.dir, 'haproxy.cfg');
  const resend = options.retry === 'resend';
  writeFileSync(
    file,
    [
      'global',
      '  maxconn 4096',
      `  stats socket ${proxyAdminSocket(options.dir)} mode 600 level admin`,
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 5m',
      '  timeout server 5m',
      '  timeout http-request 30s',
      // A retry goes to another web (every retry, not only the last), up to three times.
      '  retries 3',
      '  option redispatch 1',
      // The webs read the client's address from the last X-Forwarded-For (ONCE_TRUST_PROXY=1).
      '  option forwardfor',
      // A request is resent only from HAProxy's buffer: the whole body must be in it first.
      ...(resend ? ['  option http-buffer-request', '  retry-on all-retryable-errors'] : []),
      'frontend web',
      `  bind ${options.host}:${options.port}`,
      '  default_backend webs',
      'backend webs',
      '  balance roundrobin',
      '  option httpchk',
      // With a Host the webs answer to (they refuse a request naming none of theirs).
      '  http-check send meth GET uri /api/health ver HTTP/1.1 hdr Host 127.0.0.1',
      '  default-server check inter 1s fall 2 rise 1',
      ...options.webs.map((web) => `  server ${web.name} 127.0.0.1:${web.port}`),
      '',
    ].join('\n'),
  );
  return {
    name: 'proxy',
    command: HAPROXY,
    // -db: in the foreground, so the supervisor holds it; -W would fork a master.
    args: ['-db', '-f', file],
    healthUrl: `http://127.0.0.1:${options.port}/api/health`,
    readyTimeoutMs: 30_000,
  };
}

const proxyAdminSocket = (dir: string) => path.join(dir, 'haproxy-admin.sock');

/**
 * One command on the running proxy's admin socket (HAProxy's runtime API: `show stat`,
 * `disable server webs/web-2`, ...); resolves with its answer.
 */
export function proxyCommand(dir: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyAdminSocket(dir));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end(`${command}\n`);
  });
}

/** Each web's counters from `show stat`: answers, requests in progress, retries, redispatches. */
export async function proxyWebStats(dir: string) {
  const [header, ...rows] = (await proxyCommand(dir, 'show stat')).trim().split('\n');
  const columns = header!.replace(/^# /, '').split(',');
  const at = (row: string[], name: string) => Number(row[columns.indexOf(name)] || 0);
  return rows
    .map((line) => line.split(','))
    .filter((row) => row[0] === 'webs' && row[1] !== 'BACKEND')
    .map((row) => ({
      web: row[1]!,
      answered: ['hrsp_1xx', 'hrsp_2xx', 'hrsp_3xx', 'hrsp_4xx', 'hrsp_5xx'].reduce(
        (sum, name) => sum + at(row, name),
        0,
      ),
      current: at(row, 'scur'),
      retries: at(row, 'wretr'),
      redispatches: at(row, 'wredis'),
    }));
}

/**
 * PgBouncer in transaction mode in front of the server `databaseUrl` names, 20 server
 * connections per database (`writePgBouncerConfig`). Returns the part and the URL the apps use
 * instead of `databaseUrl`.
 */
export function poolerSpec(options: { dir: string; databaseUrl: string; port: number }): {
  spec: ProcessSpec;
  url: (databaseUrl: string) => string;
} {
  const { dir, databaseUrl: serverUrl, port } = options;
  return {
    spec: {
      name: 'pooler',
      ...writePgBouncerConfig({ dir, serverUrl, port, poolSize: 20 }),
      readyLine: /LOG listening on 127\.0\.0\.1:\d+$/,
      failLine: /FATAL (.*)$/,
      readyTimeoutMs: 15_000,
    },
    url: (databaseUrl) => {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(options.port);
      return url.toString();
    },
  };
}
