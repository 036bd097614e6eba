import { schema } from '@once/db';
import { getTableConfig, PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { UNSETTLED_STATUS_LIST } from './unsettled-statuses.ts';

describe('the reconciler spells the unsettled states as the partial index does', () => {
  it("renders `'processing', 'unknown'` from the state machine, the list of payments_status_updated_idx", () => {
    const index = getTableConfig(schema.payments).indexes.find(
      (i) => i.config.name === 'payments_status_updated_idx',
    );
    const where = index?.config.where;
    if (!where) throw new Error('payments_status_updated_idx has no predicate');
    const predicate = new PgDialect().sqlToQuery(where).sql;
    // The planner uses the index only for a query whose predicate implies the index's.
    expect(predicate).toBe(`"payments"."status" in (${UNSETTLED_STATUS_LIST})`);
    expect(UNSETTLED_STATUS_LIST).toBe("'processing', 'unknown'");
  });
});
