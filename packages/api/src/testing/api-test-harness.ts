import { seedDemoData } from '@once/db/seed';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
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
  await seedDemoData(database.client.db);
  const deps = createApiDependencies({
    db: database.client.db,
    sessionSecret: TEST_SESSION_SECRET,
    allowDemoLogin: true,
    ...options,
  });
  return {
    database,
    deps,
    caller(headers = {}) {
      const resHeaders = new Headers();
      const req = new Request('http://localhost/api/trpc', { headers });
      return { api: createCaller(createContext({ req, resHeaders, ...deps })), resHeaders };
    },
    drop: () => database.drop(),
  };
}

export const bearer = (tenant: 'tenant_a' | 'tenant_b') => ({
  authorization: `Bearer once_test_${tenant}`,
});
