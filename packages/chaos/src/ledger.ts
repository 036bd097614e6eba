import postgres from 'postgres';

/** One successful charge in a processor's books, by the client's Idempotency-Key. */
export interface LedgerCharge {
  key: string;
  amount?: number;
}

/** How the kit reads a processor's charges after a run: a team's own SQL, an HTTP endpoint. */
export type LedgerReader = () => Promise<LedgerCharge[]>;

/**
 * Charges from the Once mock processor's `/admin/ledger`, keyed by a metadata field the
 * service under test writes on each charge (e.g. `metadata: { checkout_key }`).
 */
export function onceProcessorLedger(options: {
  url: string;
  token: string;
  keyField: string;
}): LedgerReader {
  return async () => {
    const url = new URL(options.url);
    url.searchParams.set('kind', 'charge');
    const response = await fetch(url, { headers: { 'x-admin-token': options.token } });
    if (!response.ok) throw new Error(`ledger ${url.pathname} answered ${response.status}`);
    const { data } = (await response.json()) as { data: Record<string, unknown>[] };
    return data.flatMap((entry) => {
      const key = fieldOf(entry, options.keyField);
      return typeof key === 'string'
        ? [{ key, amount: typeof entry.amount === 'number' ? entry.amount : undefined }]
        : [];
    });
  };
}

/**
 * Charges from SQL on the team's database: `query` returns one row per charge with a `key`
 * column (and optionally `amount`).
 */
export function sqlLedger(options: { url: string; query: string }): LedgerReader {
  return async () => {
    const sql = postgres(options.url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql.unsafe<{ key: unknown; amount?: unknown }[]>(options.query);
      return rows.map((row) => ({
        key: String(row.key),
        amount: row.amount === undefined ? undefined : Number(row.amount),
      }));
    } finally {
      await sql.end();
    }
  };
}

function fieldOf(entry: Record<string, unknown>, path: string): unknown {
  let value: unknown = entry;
  for (const part of path.split('.')) {
    value =
      value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  return value;
}
