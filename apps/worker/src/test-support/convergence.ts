import { setTimeout as sleep } from 'node:timers/promises';
import { verifyInvariant } from '@once/invariant';
import type postgres from 'postgres';
import { expect } from 'vitest';

/** Waits until every listed payment is terminal; returns their statuses by id. */
export async function waitForTerminal(
  sql: postgres.Sql,
  paymentIds: string[],
  timeoutMs = 30_000,
): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await sql<{ id: string; status: string }[]>`
      select id, status from payments where id = any(${paymentIds})`;
    const statuses = new Map(rows.map((row) => [row.id, row.status]));
    const pending = paymentIds.filter(
      (id) => !['succeeded', 'declined', 'failed'].includes(statuses.get(id) ?? ''),
    );
    if (pending.length === 0) return statuses;
    if (Date.now() > deadline) {
      throw new Error(
        `not terminal after ${timeoutMs} ms: ${pending.map((id) => `${id}=${statuses.get(id)}`).join(', ')}`,
      );
    }
    await sleep(100);
  }
}

/** Charges in the processor's ledger for one payment (by the metadata the worker sends). */
export async function ledgerChargesFor(
  processorSql: postgres.Sql,
  paymentId: string,
): Promise<number> {
  const [row] = await processorSql<{ n: number }[]>`
    select count(*)::int as n from ledger_entries
    where kind = 'charge' and metadata->>'payment_id' = ${paymentId}`;
  return row?.n ?? 0;
}

/**
 * Asserts that `verifyInvariant` finds no violations once everything has converged.
 */
export async function expectConvergedInvariantHolds(
  databaseUrl: string,
  processorDatabaseUrl: string,
): Promise<void> {
  const report = await verifyInvariant({ databaseUrl, processorDatabaseUrl, converged: true });
  expect(report.violations).toEqual([]);
}
