import { describe, expect, it } from 'vitest';
import { type PoolNotice, subscribePoolNotices } from './pool-notices.ts';
import { openPostgresPool } from './postgres-pool.ts';
import { testAdminUrl } from './testing/test-database.ts';
import { isTransientDatabaseError } from './transient-error.ts';

describe('pool notices', () => {
  it("a server WARNING on any pool opened by openPostgresPool reaches the process's subscribers", async () => {
    const heard: PoolNotice[] = [];
    const unsubscribe = subscribePoolNotices((notice) => heard.push(notice));
    const sql = openPostgresPool(testAdminUrl(), { applicationName: 'pool-notices-test', max: 1 });
    try {
      // The text PostgreSQL sends when a COMMIT stops waiting for its synchronous standby.
      await sql`do $$ begin raise warning 'canceling wait for synchronous replication due to user request'; end $$`;
      expect(heard.map((n) => [n.severity, n.message])).toEqual([
        ['WARNING', 'canceling wait for synchronous replication due to user request'],
      ]);
      unsubscribe();
      await sql`do $$ begin raise warning 'after unsubscribe'; end $$`;
      expect(heard).toHaveLength(1);
    } finally {
      unsubscribe();
      await sql.end({ timeout: 1 });
    }
  });
});

describe('isTransientDatabaseError after a failover', () => {
  it('a write refused as read-only (25006: a demoted node under an old connection) is retried', () => {
    expect(isTransientDatabaseError({ code: '25006' })).toBe(true);
    expect(isTransientDatabaseError({ cause: { code: '25006' } })).toBe(true);
  });
});
