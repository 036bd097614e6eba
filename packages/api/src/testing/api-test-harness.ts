import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { installDatabaseClock } from '@once/postgres/testing';
import postgres from 'postgres';
import type { Clock } from '../clock.ts';
import { createContext } from '../context.ts';
import { type ApiDependencies, createApiDependencies } from '../dependencies.ts';
import { createCaller } from '../root.ts';

export const TEST_SESSION_SECRET = 'test-session-secret-0123456789';

export interface ApiTestHarness {
  database: TestDatabase;
  deps: ApiDependencies;
  /** A caller as an HTTP request with these headers would get; `resHeaders` shows what it set. */
  caller(headers?: Record<string, string>): {
    api: ReturnType<typeof createCaller>;
    resHeaders: Headers;
  };
  /**
   * The API's clock and the database's: the real time until `set` jumps both to `ms` (the API's
   * then stands there, the database's runs on from there, as a lease's time must).
   */
  clock: Clock & { set(ms: number): Promise<void>; pass(ms: number): Promise<void> };
  drop(): Promise<void>;
}

/**
 * A migrated, seeded database and the API's real dependencies over it; `options` go to
 * `createApiDependencies` (a rate limit, a processor ledger, an env).
 */
export async function createApiTestHarness(
  label: string,
  options: Omit<Parameters<typeof createApiDependencies>[0], 'db' | 'sessionSecret'> = {},
): Promise<ApiTestHarness> {
  const database = await createTestDatabase(label);
  // Installed before the client opens a connection: only later connections see it.
  const clockSql = postgres(database.url, { max: 1, onnotice: () => {} });
  const databaseClock = await installDatabaseClock(clockSql);
  let setMs: number | undefined;
  const clock = {
    now: () => new Date(setMs ?? Date.now()),
    async set(ms: number) {
      await databaseClock.pass(ms - clock.now().getTime());
      setMs = ms;
    },
    pass: (ms: number) => clock.set(clock.now().getTime() + ms),
  };
  await seedDemoData(database.client.db);
  const deps = createApiDependencies({
    db: database.client.db,
    sessionSecret: TEST_SESSION_SECRET,
    allowDemoLogin: true,
    clock,
    ...options,
  });
  return {
    database,
    deps,
    clock,
    caller(headers = {}) {
      const resHeaders = new Headers();
      const req = new Request('http://localhost/api/trpc', { headers });
      return { api: createCaller(createContext({ req, resHeaders, ...deps })), resHeaders };
    },
    async drop() {
      await clockSql.end();
      await database.drop();
    },
  };
}

export const bearer = (tenant: 'tenant_a' | 'tenant_b') => ({
  authorization: `Bearer once_test_${tenant}`,
});
