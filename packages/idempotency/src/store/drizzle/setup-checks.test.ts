import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotency } from '../../core/engine.ts';
import { isIdempotencyError } from '../../core/errors.ts';
import type { IdempotencyEvent } from '../../core/types.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
  testAdminUrl,
  withDatabase,
} from '../../testing/test-database.ts';
import { startKeyMaintenance } from './maintenance.ts';
import { checkIdempotencyTables, MISSING_TABLES_MESSAGE } from './missing-tables.ts';
import { createDrizzleStore } from './store.ts';

/** Misconfiguration a new user meets first: no tables, no key maintenance. */
let empty: { sql: postgres.Sql; drop(): Promise<void> };
let migrated: IdempotencyTestDatabase;
beforeAll(async () => {
  const admin = postgres(testAdminUrl(), { max: 1, onnotice: () => {} });
  const name = `idem_no_tables_${Date.now().toString(36)}`;
  await admin.unsafe(`create database ${name}`);
  const sql = postgres(withDatabase(testAdminUrl(), name), { max: 2, onnotice: () => {} });
  empty = {
    sql,
    async drop() {
      await sql.end({ timeout: 1 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
  migrated = await createIdempotencyTestDatabase('setup_checks');
});
afterAll(async () => {
  await empty?.drop();
  await migrated?.drop();
});

describe('a database without the tables', () => {
  it('fails the start-time check with the one line naming the migration', async () => {
    await expect(checkIdempotencyTables(drizzle(empty.sql))).rejects.toThrow(
      MISSING_TABLES_MESSAGE,
    );
    await expect(checkIdempotencyTables(migrated.db)).resolves.toBeUndefined();
  });

  it('answers 503 with that line as the cause, and logs it once', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const idempotency = createIdempotency({ store: createDrizzleStore(drizzle(empty.sql)) });
      const request = (key: string) =>
        idempotency.execute(
          { tenantId: 't', operation: 'op', key, fingerprint: 'f' },
          async () => ({ status: 200, headers: {}, body: 'ran' }),
        );
      for (const key of ['k1', 'k2']) {
        const error = await request(key).catch((e: unknown) => e);
        expect(isIdempotencyError(error, 'idempotency_store_unavailable')).toBe(true);
        expect((error as Error).cause).toMatchObject({ message: MISSING_TABLES_MESSAGE });
      }
      expect(log.mock.calls).toEqual([[MISSING_TABLES_MESSAGE]]);
    } finally {
      log.mockRestore();
    }
  });
});

describe('startKeyMaintenance', () => {
  it('on a database without the tables, reports the one line naming the migration', async () => {
    const errors: unknown[] = [];
    const maintenance = startKeyMaintenance(drizzle(empty.sql), { onError: (e) => errors.push(e) });
    try {
      await vi.waitFor(() => expect(errors).toHaveLength(2), { timeout: 5_000 });
      for (const error of errors) expect(error).toMatchObject({ message: MISSING_TABLES_MESSAGE });
    } finally {
      maintenance.stop();
    }
  });

  it("settles a crashed holder's key once its lease ends, without a retry, and tells onEvent", async () => {
    const store = createDrizzleStore(migrated.db);
    const reserved = await store.reserve({
      tenantId: 't',
      operation: 'op',
      key: 'crashed',
      fingerprint: 'f',
      ownerToken: 'dead-process',
      leaseMs: 1,
      ttlMs: 60_000,
      onExpiredLease: 'resume',
      rateLimit: undefined,
    });
    expect(reserved.kind).toBe('acquired');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const events: IdempotencyEvent[] = [];
    const maintenance = startKeyMaintenance(migrated.db, {
      sweepEveryMs: 50,
      onEvent: (event) => events.push(event),
    });
    try {
      await vi.waitFor(
        async () => {
          const [row] =
            await migrated.sql`select state from idempotency_keys where key = 'crashed'`;
          expect(row?.state).toBe('released');
        },
        { timeout: 5_000, interval: 50 },
      );
      // What the Prometheus and OpenTelemetry observers count as maintenance rows.
      await vi.waitFor(() => expect(events).toContainEqual({ type: 'swept', count: 1 }));
    } finally {
      maintenance.stop();
    }
  });
});
