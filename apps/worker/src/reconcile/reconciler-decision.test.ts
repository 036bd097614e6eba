import { schema } from '@once/db';
import { getTableConfig, PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { isUnsettled } from './reconciler-decision.ts';

describe('the reconciler spells the unsettled states as the partial index does', () => {
  it("renders `in ('processing', 'unknown')` from the state machine, the list of payments_status_updated_idx", () => {
    const index = getTableConfig(schema.payments).indexes.find(
      (i) => i.config.name === 'payments_status_updated_idx',
    );
    const where = index?.config.where;
    if (!where) throw new Error('payments_status_updated_idx has no predicate');
    const dialect = new PgDialect();
    const predicate = dialect.sqlToQuery(where).sql;
    // The planner uses the index only for a query whose predicate implies the index's.
    expect(predicate).toBe(dialect.sqlToQuery(isUnsettled('"payments"."status"')).sql);
    expect(predicate).toBe(`"payments"."status" in ('processing', 'unknown')`);
  });
});
