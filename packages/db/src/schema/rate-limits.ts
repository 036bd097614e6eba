import { bigint, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/**
 * Limits every web process shares (a limit kept in one process's memory lets N processes admit
 * N times it). One row per limited thing (`scope`: what is limited, e.g. session starts per
 * address; `key`: the address), holding its theoretical arrival time (GCRA): each admitted
 * request moves it one emission interval on, and a request is refused while it sits more than
 * the window ahead of now. No fixed windows, so no boundary where twice the limit fits.
 */
export const rateLimits = pgTable(
  'rate_limits',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    /** Epoch milliseconds: when the next request would arrive at the limit's steady rate. */
    tatMs: bigint('tat_ms', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] })],
);
