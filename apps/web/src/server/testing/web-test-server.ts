import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { startWebRuntime, type WebRuntime } from '../runtime.ts';
import { type ServedHandler, serveFetch } from './serve-fetch.ts';
import { webApiRoutes } from './web-routes.ts';

export interface WebTestServer {
  database: TestDatabase;
  runtime: WebRuntime;
  server: ServedHandler;
  /** Closes the server and the runtime's pool, then drops the database. */
  close(): Promise<void>;
}

/**
 * A fresh migrated database, the web runtime over it, and its API routes over real HTTP.
 * `databaseUrl` gives the runtime another way to the database (a fault-injecting proxy).
 */
export async function startWebTestServer(
  label: string,
  env: Record<string, string>,
  databaseUrl: (url: string) => string = (url) => url,
): Promise<WebTestServer> {
  const database = await createTestDatabase(label);
  let runtime: WebRuntime | undefined;
  try {
    runtime = await startWebRuntime({ DATABASE_URL: databaseUrl(database.url), ...env });
    const started = runtime;
    const server = await serveFetch(webApiRoutes(async () => started));
    return {
      database,
      runtime,
      server,
      async close() {
        await server.close();
        await started.client.close();
        await database.drop();
      },
    };
  } catch (error) {
    await runtime?.client.close();
    await database.drop();
    throw error;
  }
}
