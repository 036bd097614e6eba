import type { RunningSystem } from '@once/scripts/start-system';
import postgres from 'postgres';

/**
 * The processor's ledger rows of one payment, oldest first, as `kind amount`: the judge of
 * how much money moved and how many times, read from its database, not from a page.
 *
 * @example
 * await ledgerOf(system(), paymentId); // ['charge 3999', 'refund 1000']
 */
export async function ledgerOf(system: RunningSystem, paymentId: string): Promise<string[]> {
  const sql = postgres(system.processorDatabaseUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ kind: string; amount: number }[]>`
      select kind, amount from ledger_entries where metadata->>'payment_id' = ${paymentId} order by seq`;
    return rows.map((row) => `${row.kind} ${row.amount}`);
  } finally {
    await sql.end();
  }
}
