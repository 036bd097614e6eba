// The reaper as its own process (as in the worker): `node --import tsx bench/src/servers/reaper.ts`.
// env DATABASE_URL. Calls reapExpiredKeys until a call deletes nothing, then prints one JSON line.
import { createDatabaseClient, requireDatabaseUrl } from '@once/db';
import { reapExpiredKeys } from '@once/idempotency/drizzle';

const client = createDatabaseClient(requireDatabaseUrl(), {
  applicationName: 'once-bench-reaper',
  max: 1,
});
console.log('reaping');
const started = performance.now();
let deleted = 0;
let batches = 0;
for (;;) {
  const result = await reapExpiredKeys(client.db, { batchSize: 500, maxBatches: 100 });
  deleted += result.deleted;
  batches += result.batches;
  if (result.deleted === 0) break;
}
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ deleted, batches, seconds }));
await client.close();
