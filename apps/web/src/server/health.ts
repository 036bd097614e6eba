import type { WebRuntime } from './runtime.ts';

/**
 * `GET /api/health`: 200 `{ ok: true, db: 'up' }` after a real `select 1`, 503 otherwise
 * (also while the database is unreachable at start).
 */
export function createHealthHandler(getRuntime: () => Promise<WebRuntime>) {
  return async (): Promise<Response> => {
    try {
      const { client } = await getRuntime();
      await client.sql`select 1`;
      return Response.json({ ok: true, db: 'up' }, { headers: { 'cache-control': 'no-store' } });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return Response.json(
        { ok: false, db: 'down', error: message },
        { status: 503, headers: { 'cache-control': 'no-store', 'retry-after': '1' } },
      );
    }
  };
}
