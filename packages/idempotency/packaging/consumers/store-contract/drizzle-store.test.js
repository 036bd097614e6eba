// A store author's test file, run with `node --test` (no vitest, no jest): the installed
// tarball's store contract against its own Drizzle store on a fresh database.
import { after, before, describe, it } from 'node:test';
import { createDrizzleStore, idempotencySchemaSql } from '@once/idempotency/drizzle';
import { storeContractCases } from '@once/idempotency/store/contract';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';

const client = postgres(process.env.DATABASE_URL, { max: 20, onnotice: () => {} });
before(() => client.unsafe(idempotencySchemaSql));
after(() => client.end());

describe('the Drizzle store keeps the idempotency store contract', () => {
  for (const c of storeContractCases(() => createDrizzleStore(drizzle(client)))) it(c.name, c.run);
});
