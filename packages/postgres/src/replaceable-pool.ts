import type postgres from 'postgres';
import { type CreateDatabaseClientOptions, openPostgresPool } from './postgres-pool.ts';
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
 * A postgres.js pool that can be swapped for a fresh one unnoticed by its holders: postgres.js
 * 3.4.9 can throw from a `setImmediate` when a backend dies mid-write (porsager/postgres#1154),
 * and that connection may never flush again. `replace()` destroys the old pool (its queries
 * reject with a transient error) and re-issues LISTENs on the new one. `openListener`, when
 * given, is where LISTEN goes instead (a direct connection when `open` is a transaction
 * pooler, which would not deliver the notifications); it is replaced with the pool.
 */
export function createReplaceableSql(
  open: () => postgres.Sql,
  log: PoolLog,
  openListener?: () => postgres.Sql,
): ReplaceableSql {
  let current = open();
  let listening = openListener?.();
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
    entry.meta = await (listening ?? current).listen(channel, onNotify, onListen);
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
      const oldListening = listening;
      current = open();
      listening = openListener?.();
      // Drizzle patches the parsers/serializers of its client: without them the new pool would
      // JSON-encode jsonb values a second time.
      Object.assign(current.options.parsers, old.options.parsers);
      Object.assign(current.options.serializers, old.options.serializers);
      try {
        // Destroys its sockets now: queries in flight reject and their callers retry.
        void old.end({ timeout: 0 }).catch(() => {});
        void oldListening?.end({ timeout: 0 }).catch(() => {});
      } catch (error) {
        log('db.pool_end_failed', { error: String(error) });
      }
      for (const entry of listeners) {
        (listening ?? current).listen(entry.channel, entry.onNotify, entry.onListen).then(
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
      await Promise.all([current.end({ timeout: 1 }), listening?.end({ timeout: 1 })]);
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
 * The rejection of the array-type query postgres.js 3.4.9 runs and discards on every new
 * connection (porsager/postgres#1192), when that connection dies: nothing of ours waited on
 * it, so it is survivable. Only raw driver errors count: ours arrive wrapped by Drizzle (with
 * `cause`), and an unawaited query of ours is a bug worth dying for.
 */
export function isDiscardedDriverConnectionError(reason: unknown): boolean {
  return (
    reason instanceof Error &&
    (reason as { cause?: unknown }).cause === undefined &&
    isTransientDatabaseError(reason)
  );
}

/**
 * `createReplaceableSql` over `openPostgresPool`: what web, worker and processor hold. With
 * `listenUrl` (a direct server connection), LISTEN opens its session there.
 */
export function openReplaceablePool(
  url: string,
  options: CreateDatabaseClientOptions & { listenUrl?: string },
  log: PoolLog,
): ReplaceableSql {
  const { listenUrl, ...poolOptions } = options;
  return createReplaceableSql(
    () => openPostgresPool(url, poolOptions),
    log,
    listenUrl
      ? () => openPostgresPool(listenUrl, { applicationName: options.applicationName, max: 1 })
      : undefined,
  );
}
