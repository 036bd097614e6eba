import type postgres from 'postgres';
import { isTransientDatabaseError } from './transient-error.ts';

/** `event`, plus fields to log; the worker's logger has this shape. */
export type PoolLog = (event: string, fields?: Record<string, unknown>) => void;

interface ReplaceableSql {
  /** Always forwards to the current pool; safe to capture once (also for `drizzle(sql)`). */
  sql: postgres.Sql;
  /** Ends the current pool (pending queries fail fast and are retried) and opens a new one. */
  replace(reason: string): void;
  close(): Promise<void>;
}

/**
 * A postgres.js pool that can be swapped for a fresh one without the code that holds it
 * noticing. Why: postgres.js 3.4.9 can throw from a `setImmediate` when a backend dies
 * while a small write is buffered (porsager/postgres#1154, #1208; unfixed in 3.4.9), and
 * the connection it happens on may never flush again, so queries sent on it would hang.
 * The process catches that exception (`isPostgresNullSocketWrite`) and calls `replace()`:
 * the old pool is destroyed (its queries reject with a transient error), new queries go to
 * a new pool, and LISTENs are re-issued on it. Web, worker and processor share this copy.
 *
 * @example
 * const pool = createReplaceableSql(() => createDatabaseClient(url, { applicationName: 'x' }).sql, log);
 * await pool.sql`select 1`; pool.replace('driver bug'); await pool.sql`select 1`;
 */
export function createReplaceableSql(open: () => postgres.Sql, log: PoolLog): ReplaceableSql {
  let current = open();
  let closed = false;
  const listeners: {
    channel: string;
    onNotify: (payload: string) => void;
    onListen?: () => void;
    meta?: postgres.ListenMeta;
  }[] = [];

  const listen = async (
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ) => {
    const entry: (typeof listeners)[number] = { channel, onNotify, onListen };
    entry.meta = await current.listen(channel, onNotify, onListen);
    listeners.push(entry);
    return {
      state: entry.meta.state,
      unlisten: async () => {
        listeners.splice(listeners.indexOf(entry), 1);
        await entry.meta?.unlisten();
      },
    };
  };

  const forward = new Proxy(function forwardedSql() {}, {
    apply: (_target, _this, args: unknown[]) =>
      (current as unknown as (...a: unknown[]) => unknown)(...args),
    get: (_target, property) => {
      if (property === 'listen') return listen;
      const value = Reflect.get(current, property);
      return typeof value === 'function' ? value.bind(current) : value;
    },
  }) as unknown as postgres.Sql;

  return {
    sql: forward,
    replace(reason) {
      if (closed) return;
      log('db.pool_replaced', { reason });
      const old = current;
      current = open();
      // Drizzle patches the type parsers/serializers of the client it is given (json/jsonb and
      // dates pass through untouched); without carrying them over, the new pool would
      // JSON-encode jsonb values a second time (stored as a string: metadata lost).
      Object.assign(current.options.parsers, old.options.parsers);
      Object.assign(current.options.serializers, old.options.serializers);
      try {
        // Destroys its sockets now: queries in flight reject and their callers retry.
        void old.end({ timeout: 0 }).catch(() => {});
      } catch (error) {
        log('db.pool_end_failed', { error: String(error) });
      }
      for (const entry of listeners) {
        current.listen(entry.channel, entry.onNotify, entry.onListen).then(
          (meta) => {
            entry.meta = meta;
          },
          (error: unknown) =>
            log('db.relisten_failed', { channel: entry.channel, error: String(error) }),
        );
      }
    },
    async close() {
      closed = true;
      // Short: a connection broken by the driver bug never answers, and exit must stay < 5 s.
      await current.end({ timeout: 1 });
    },
  };
}

/** The postgres.js 3.4.9 null-socket write crash (see createReplaceableSql). */
export function isPostgresNullSocketWrite(error: unknown): boolean {
  return (
    error instanceof TypeError &&
    /reading 'write'|evaluating 'socket\.write'/.test(error.message) &&
    /postgres[\\/]src[\\/]connection\.js/.test(error.stack ?? '')
  );
}

/**
 * A connection failure that reached `unhandledRejection` straight from the driver. postgres.js
 * 3.4.9 runs an array-type query first on every new connection and discards its promise
 * (porsager/postgres#1192): when that connection dies before the answer (pg_terminate_backend,
 * a restart, `replace()` destroying the old pool's sockets) the rejection
 * (`write CONNECTION_DESTROYED`, 57P01, ...) is unhandled. Nothing of ours waited on it and the
 * query that opened the connection fails on its own, so a process may log it and go on.
 * Only raw driver errors count: an error of our own code arrives wrapped by Drizzle
 * ("Failed query", with `cause`), and an unawaited query of ours is a bug worth dying for.
 *
 * @example
 * process.on('unhandledRejection', (r) => isDiscardedDriverConnectionError(r) ? log(r) : crash(r));
 */
export function isDiscardedDriverConnectionError(reason: unknown): boolean {
  return (
    reason instanceof Error &&
    (reason as { cause?: unknown }).cause === undefined &&
    isTransientDatabaseError(reason)
  );
}
