import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { createProcessorTestDatabase } from '@once/processor/testing';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { seedCheckout, seedTenants } from './testing-seed.ts';
import { verifyInvariant } from './verify-invariant.ts';

let app: TestDatabase;
let ledgerDb: { url: string; drop(): Promise<void> };
let ledger: postgres.Sql;

beforeAll(async () => {
  app = await createTestDatabase('invariant');
  await seedTenants(app.client.sql);
  // The processor's own schema, from its migrations: the ledger the checker reads is the
  // real one, so a renamed column or a new constraint breaks these tests, not production.
  ledgerDb = await createProcessorTestDatabase('invariant_ledger', { migrated: true });
  ledger = postgres(ledgerDb.url, { max: 1, onnotice: () => {} });
  for (const tenant of ['tenant_a', 'tenant_b']) {
    await ledger`insert into accounts (id, secret_key) values (${`acct_${tenant}`}, ${`sk_test_${tenant}`})`;
  }
});
afterAll(async () => {
  await ledger?.end();
  await ledgerDb?.drop();
  await app?.drop();
});
beforeEach(async () => {
  await app.client.sql`delete from payment_actions`;
  await app.client.sql`delete from refunds`;
  await app.client.sql`delete from outbox_jobs`;
  await app.client.sql`delete from payments`;
  await ledger`delete from ledger_entries`;
});

/** A charge in the processor's ledger; `metadata` null: one that names no payment. */
async function charge(
  paymentId: string,
  downstreamKey: string,
  intentId: string,
  tenantId = 'tenant_a',
  options: { amount?: number; metadata?: Record<string, string> | null } = {},
) {
  const metadata =
    options.metadata === undefined
      ? { payment_id: paymentId, tenant_id: tenantId }
      : (options.metadata ?? {});
  await ledger`
    insert into ledger_entries (account_id, kind, payment_intent_id, charge_id, amount, currency, idempotency_key, metadata)
    values (${`acct_${tenantId}`}, 'charge', ${intentId}, ${`ch_${intentId}`}, ${options.amount ?? 1999}, 'usd', ${downstreamKey},
            ${JSON.stringify(metadata)}::text::jsonb)`;
}

async function settle(paymentId: string, status: string, intentId: string | null = null) {
  await app.client.sql`
    update payments set status = ${status}, processor_payment_intent_id = ${intentId} where id = ${paymentId}`;
}

const check = (converged = true) =>
  verifyInvariant({ databaseUrl: app.url, processorDatabaseUrl: ledgerDb.url, converged });
const kinds = async (converged = true) =>
  (await check(converged)).violations.map((v) => v.kind).sort();

describe('verifyInvariant with manual capture', () => {
  const capture = async (paymentId: string, amount: number) => {
    await app.client.sql`
      update payments set status = 'captured', amount_captured = ${amount},
        processor_payment_intent_id = 'pi_m' where id = ${paymentId}`;
  };

  it('accepts a partial capture charged once, for the amount captured', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, 'once_capture_act_1', 'pi_m', 'tenant_a', { amount: 1500 });
    await capture(paid.paymentId, 1500);
    expect(await kinds()).toEqual([]);
  });

  it('reports a second capture of one payment, and a capture of another amount', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, 'once_capture_act_1', 'pi_m', 'tenant_a', { amount: 1500 });
    await charge(paid.paymentId, 'once_capture_act_2', 'pi_m2', 'tenant_a', { amount: 1000 });
    await capture(paid.paymentId, 1500);
    expect(await kinds()).toEqual(['double_charge', 'wrong_amount']);
  });

  it('reports an authorisation captured twice (a double capture)', async () => {
    const paid = await seedCheckout(app.client.sql);
    await app.client
      .sql`update payments set capture_method = 'manual' where id = ${paid.paymentId}`;
    await charge(paid.paymentId, 'once_capture_act_1', 'pi_m', 'tenant_a', { amount: 1500 });
    await charge(paid.paymentId, 'once_capture_act_2', 'pi_m2', 'tenant_a', { amount: 1500 });
    await capture(paid.paymentId, 1500);
    expect(await kinds()).toEqual(['double_capture']);
  });

  it('reports a charge of a payment the app holds authorised or voided', async () => {
    const authorised = await seedCheckout(app.client.sql);
    const voided = await seedCheckout(app.client.sql);
    await charge(authorised.paymentId, 'k1', 'pi_a');
    await charge(voided.paymentId, 'k2', 'pi_v');
    await settle(authorised.paymentId, 'authorized', 'pi_a');
    await settle(voided.paymentId, 'voided', 'pi_v');
    expect(await kinds()).toEqual(['charged_but_not_succeeded', 'charged_but_not_succeeded']);
  });

  it('reports a charge of a payment the app holds canceled (an abandoned 3-D Secure challenge)', async () => {
    const abandoned = await seedCheckout(app.client.sql);
    await charge(abandoned.paymentId, 'k1', 'pi_c');
    await settle(abandoned.paymentId, 'canceled', 'pi_c');
    expect(await kinds()).toEqual(['charged_but_not_succeeded']);
  });

  it('an authorised payment is converged, but not while its capture is unanswered', async () => {
    const authorised = await seedCheckout(app.client.sql);
    await settle(authorised.paymentId, 'authorized', 'pi_a');
    expect(await kinds()).toEqual([]);
    await app.client.sql`
      insert into payment_actions (tenant_id, id, payment_id, kind, downstream_key, requested_by)
      values ('tenant_a', 'act_1', ${authorised.paymentId}, 'capture', 'once_capture_act_1', 'op')`;
    expect(await kinds()).toEqual(['not_converged']);
    expect(await kinds(false)).toEqual([]);
  });
});

describe('verifyInvariant with refunds', () => {
  /** A refund in the processor's ledger (a negative amount: a failed refund's return). */
  const ledgerRefund = async (paymentId: string, key: string, amount: number) => {
    await ledger`
      insert into ledger_entries (account_id, kind, payment_intent_id, charge_id, refund_id, amount, currency, idempotency_key, metadata)
      values ('acct_tenant_a', 'refund', 'pi_1', 'ch_pi_1', ${`re_${key}`}, ${amount}, 'usd', ${key},
              ${JSON.stringify({ payment_id: paymentId, tenant_id: 'tenant_a' })}::text::jsonb)`;
  };
  const appRefund = async (paymentId: string, id: string, amount: number, status = 'succeeded') => {
    await app.client.sql`
      insert into refunds (tenant_id, id, payment_id, amount, status, downstream_key, requested_by)
      values ('tenant_a', ${id}, ${paymentId}, ${amount}, ${status}, ${`once_refund_${id}`}, 'op')`;
  };
  const paidPayment = async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1');
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    return paid;
  };

  it('accepts partial refunds the app and the ledger agree on, and a failed one given back', async () => {
    const paid = await paidPayment();
    await appRefund(paid.paymentId, 'rf_1', 500);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_1', 500);
    await appRefund(paid.paymentId, 'rf_2', 300, 'failed');
    await ledgerRefund(paid.paymentId, 'once_refund_rf_2', 300);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_2', -300);
    expect(await kinds()).toEqual([]);
  });

  it('reports a refund sent twice under one key (a double refund)', async () => {
    const paid = await paidPayment();
    await appRefund(paid.paymentId, 'rf_1', 500);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_1', 500);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_1', 500);
    expect(await kinds()).toEqual(['double_refund', 'refund_mismatch']);
  });

  it('reports refunds over what was charged, and a refund the app does not hold', async () => {
    const paid = await paidPayment();
    await ledgerRefund(paid.paymentId, 'k1', 1999);
    await ledgerRefund(paid.paymentId, 'k2', 1);
    expect(await kinds()).toEqual(['over_refund', 'refund_mismatch']);
  });

  it('reports refunds the app holds over what the payment received', async () => {
    const paid = await paidPayment();
    await appRefund(paid.paymentId, 'rf_1', 1500);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_1', 1500);
    await appRefund(paid.paymentId, 'rf_2', 1000);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_2', 1000);
    const found = (await check()).violations.filter((v) => v.kind === 'over_refund');
    expect(found.map((v) => v.detail)).toEqual([
      'the ledger refunded 2500, it charged 1999',
      'the app holds 2500 refunded of 1999 received',
    ]);
  });

  it('converged, money is conserved: money refunded that names no payment is reported', async () => {
    const paid = await paidPayment();
    await ledger`
      insert into ledger_entries (account_id, kind, payment_intent_id, charge_id, refund_id, amount, currency, idempotency_key)
      values ('acct_tenant_a', 'refund', 'pi_1', 'ch_pi_1', 're_x', 500, 'usd', 'k_x')`;
    expect(await kinds()).toEqual(['money_not_conserved']);
    expect(await kinds(false)).toEqual([]);
    await ledger`delete from ledger_entries where refund_id = 're_x'`;
    await appRefund(paid.paymentId, 'rf_1', 500);
    await ledgerRefund(paid.paymentId, 'once_refund_rf_1', 500);
    expect(await kinds()).toEqual([]);
  });

  it('an unanswered refund is not converged', async () => {
    const paid = await paidPayment();
    await appRefund(paid.paymentId, 'rf_1', 500, 'requested');
    expect(await kinds()).toEqual(['not_converged']);
    expect(await kinds(false)).toEqual([]);
  });
});

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

  it('reports a charge that names no payment: no metadata, or only part of it', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1');
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    expect(await kinds()).toEqual([]);
    await charge('', 'stray-key', 'pi_stray', 'tenant_a', { metadata: null });
    await charge('', 'half-key', 'pi_half', 'tenant_b', { metadata: { tenant_id: 'tenant_b' } });
    const report = await check();
    expect(report.ledgerCharges).toBe(3);
    expect(report.violations).toMatchObject([
      { kind: 'charge_without_payment', tenantId: 'acct_tenant_a', paymentId: undefined },
      { kind: 'charge_without_payment', tenantId: 'tenant_b', paymentId: undefined },
    ]);
    expect(report.violations[0]!.detail).toMatch(
      /1999 \(pi_stray on acct_tenant_a\) without the payment metadata/,
    );
  });

  it('reports a charge of another amount than its payment', async () => {
    const paid = await seedCheckout(app.client.sql);
    await charge(paid.paymentId, paid.downstreamKey, 'pi_1', 'tenant_a', { amount: 2999 });
    await settle(paid.paymentId, 'succeeded', 'pi_1');
    const report = await check();
    expect(report.violations).toMatchObject([
      { kind: 'wrong_amount', tenantId: 'tenant_a', paymentId: paid.paymentId },
    ]);
    expect(report.violations[0]!.detail).toContain('charged 2999 (pi_1), the payment is for 1999');
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
