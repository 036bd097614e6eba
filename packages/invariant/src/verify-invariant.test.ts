import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { createEmptyTestDatabase } from '@once/postgres/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { seedCheckout, seedTenants } from './testing-seed.ts';
import { verifyInvariant } from './verify-invariant.ts';

// The ledger columns the checker reads, as the processor's schema defines them.
const LEDGER_DDL = `
  create table ledger_entries (
    seq bigserial primary key, account_id text not null, kind text not null,
    payment_intent_id text not null, charge_id text not null, amount bigint not null,
    currency text not null, idempotency_key text, metadata jsonb not null default '{}')`;

let app: TestDatabase;
let ledgerDb: { url: string; drop(): Promise<void> };
let ledger: postgres.Sql;

beforeAll(async () => {
  app = await createTestDatabase('invariant');
  await seedTenants(app.client.sql);
  ledgerDb = await createEmptyTestDatabase('invariant_ledger');
  ledger = postgres(ledgerDb.url, { max: 1, onnotice: () => {} });
  await ledger.unsafe(LEDGER_DDL);
});
afterAll(async () => {
  await ledger?.end();
  await ledgerDb?.drop();
  await app?.drop();
});
beforeEach(async () => {
  await app.client.sql`delete from outbox_jobs`;
  await app.client.sql`delete from payments`;
  await ledger`delete from ledger_entries`;
});

async function charge(
  paymentId: string,
  downstreamKey: string,
  intentId: string,
  tenantId = 'tenant_a',
) {
  await ledger`
    insert into ledger_entries (account_id, kind, payment_intent_id, charge_id, amount, currency, idempotency_key, metadata)
    values (${`acct_${tenantId}`}, 'charge', ${intentId}, ${`ch_${intentId}`}, 1999, 'usd', ${downstreamKey},
            ${JSON.stringify({ payment_id: paymentId, tenant_id: tenantId })}::text::jsonb)`;
}

async function settle(paymentId: string, status: string, intentId: string | null = null) {
  await app.client.sql`
    update payments set status = ${status}, processor_payment_intent_id = ${intentId} where id = ${paymentId}`;
}

const check = (converged = true) =>
  verifyInvariant({ databaseUrl: app.url, processorDatabaseUrl: ledgerDb.url, converged });
const kinds = async (converged = true) =>
  (await check(converged)).violations.map((v) => v.kind).sort();

describe('verifyInvariant', () => {
  it('accepts a converged system where each payment matches the ledger', async () => {
    const paid = await seedCheckout(app.client.sql);
    const declined = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1');
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    await settle(declined.paymentId, 'declined');
    const report = await check();
    expect(report).toEqual({ payments: 2, ledgerCharges: 1, violations: [] });
  });

  it('reports two charges for one payment', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1');
    await charge(paid.paymentId, 'another-key', 'pi_2');
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    expect(await kinds()).toContain('double_charge');
  });

  it('reports two charges under one downstream key', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1');
    await charge('pay_other', paid.downstreamKey, 'pi_2');
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    expect(await kinds()).toEqual(['charge_without_payment', 'double_charge']);
  });

  it('reports app states that contradict the ledger', async () => {
    const ghost = await seedCheckout(app.client.sql);
    const hidden = await seedCheckout(app.client.sql);
    const swapped = await seedCheckout(app.client.sql);
    await settle(ghost.paymentId, 'succeeded', 'pi_ghost');
    await charge(hidden.paymentId, hidden.downstreamKey, 'pi_hidden');
    await settle(hidden.paymentId, 'failed');
    await charge(swapped.paymentId, swapped.downstreamKey, 'pi_real');
    await settle(swapped.paymentId, 'succeeded', 'pi_other');
    expect(await kinds()).toEqual([
      'charged_but_not_succeeded',
      'intent_mismatch',
      'succeeded_without_charge',
    ]);
  });

  it('reports two payments for one checkout key, and a checkout with none', async () => {
    const first = await seedCheckout(app.client.sql);
    const second = await seedCheckout(app.client.sql);
    // The schema forbids this (payments_idempotency_key_unique); the checker must still see it
    // in a database where the index is missing (dropped, or data from before it existed).
    await app.client.sql`drop index payments_idempotency_key_unique`;
    await app.client
      .sql`update payments set idempotency_key = ${first.idempotencyKey} where id = ${second.paymentId}`;
    await settle(first.paymentId, 'declined');
    await settle(second.paymentId, 'declined');
    const report = await verifyInvariant({
      databaseUrl: app.url,
      processorDatabaseUrl: ledgerDb.url,
      expectedCheckouts: [{ tenantId: 'tenant_a', idempotencyKey: 'never-arrived' }],
    });
    expect(report.violations.map((v) => v.kind).sort()).toEqual([
      'duplicate_payment',
      'missing_payment',
    ]);
    await app.client
      .sql`update payments set idempotency_key = ${second.idempotencyKey} where id = ${second.paymentId}`;
    await app.client
      .sql`create unique index payments_idempotency_key_unique on payments (tenant_id, idempotency_key)`;
  });

  it('allows in-flight payments unless --converged', async () => {
    await seedCheckout(app.client.sql);
    expect(await kinds(false)).toEqual([]);
    expect(await kinds(true)).toEqual(['not_converged']);
  });

  it('the CLI prints violations and exits 1, exits 0 when clean', async () => {
    const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
    const run = () =>
      spawnSync(
        path.join(repoRoot, 'node_modules/.bin/tsx'),
        ['packages/invariant/src/verify-invariant-cli.ts', '--converged'],
        {
          cwd: repoRoot,
          env: { ...process.env, DATABASE_URL: app.url, PROCESSOR_DATABASE_URL: ledgerDb.url },
          encoding: 'utf8',
        },
      );
    const stuck = await seedCheckout(app.client.sql);
    const failing = run();
    expect(failing.status).toBe(1);
    expect(failing.stdout).toContain(
      `VIOLATION not_converged tenant=tenant_a payment=${stuck.paymentId}`,
    );
    await settle(stuck.paymentId, 'declined');
    const passing = run();
    expect(passing.status).toBe(0);
    expect(passing.stdout).toContain('OK: 1 payments, 0 ledger charges, 0 violations (converged)');
  });
});
