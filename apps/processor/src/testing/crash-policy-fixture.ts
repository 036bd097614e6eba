// A process with the processor's crash policy installed (run by crash-policy.test.ts):
// `discarded-type-query` makes postgres.js reject the type query of a new connection with
// nobody listening (porsager/postgres#1192); `bug` leaves a rejection of our own unhandled.
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { installCrashPolicy } from '../crash-policy.ts';

installCrashPolicy({ log: (line) => console.log(line), replaceDatabasePool: () => {} });

const mode = process.argv[2];
if (mode === 'discarded-type-query') {
  // 1 ms statement_timeout: the driver's first (array-type) query is cancelled, every time.
  const sql = postgres(process.env.ONCE_TEST_ADMIN_URL!, {
    max: 1,
    onnotice: () => {},
    connection: { statement_timeout: 1 },
  });
  await sql`select 1`.catch(() => {});
  await sql.end({ timeout: 1 });
} else if (mode === 'bug') {
  void Promise.reject(new Error('a bug of ours'));
}
await sleep(300);
console.log('still running');
