/**
 * Runs an embedded PostgreSQL as a process of its own, for the demo launcher and the
 * end-to-end tests: it prints one `POSTGRES_READY <admin url, password masked>` line when it accepts
 * connections, and shuts the server down on SIGTERM/SIGINT or when its parent goes away
 * (stdin closes), so neither Ctrl-C nor a crashed launcher leaves a server behind. When the
 * server dies on its own, it exits 1, so the launcher restarts it.
 * When it cannot start it prints one `POSTGRES_FAILED <what to do>` line (no stack trace)
 * and exits with code 1.
 *
 *   tsx packages/postgres/src/embedded-postgres-process.ts --data-dir .data/postgres --port 25432
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type EmbeddedPostgresServer, startEmbeddedPostgres } from './embedded-postgres.ts';
import { maskPassword } from './embedded-postgres-password.ts';
import { POSTGRES_FAILED_PREFIX } from './embedded-postgres-startup-error.ts';
import { ensureDatabase } from './postgres-admin.ts';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    port: { type: 'string' },
    durability: { type: 'string', default: 'durable' },
    database: { type: 'string', multiple: true, default: [] },
  },
});

const durability = values.durability === 'fast' ? 'fast' : 'durable';
let pg: EmbeddedPostgresServer;
try {
  pg = await startEmbeddedPostgres({
    dataDir: values['data-dir'] ? path.resolve(values['data-dir']) : undefined,
    port: values.port ? Number(values.port) : undefined,
    durability,
    log: (line) => {
      for (const l of line.split('\n')) if (l.trim()) console.log(l);
    },
  });
  for (const database of values.database) await ensureDatabase(pg.adminUrl, database);
} catch (error) {
  // A PostgresStartupError's message is already one line saying what to do; anything else
  // is still reported on one line (its first), the launcher prints it without a stack.
  const message = error instanceof Error ? error.message : String(error);
  console.log(`${POSTGRES_FAILED_PREFIX}${message.split('\n')[0]}`);
  process.exit(1);
}

let stopping = false;
async function shutdown(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`stopping PostgreSQL (${reason})`);
  await pg.stop();
  console.log('PostgreSQL stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
process.stdin.on('close', () => void shutdown('launcher went away'));
process.stdin.resume();
// The server died on its own (kill -9 of the postmaster, the OOM killer): exit non-zero, so
// the launcher's restart policy starts this part again on the same data and port.
void pg.serverExited.then(({ code, signal }) => {
  if (stopping) return;
  console.log(
    `PostgreSQL server exited on its own (${signal ?? `code ${code}`}); exiting so it is restarted`,
  );
  process.exit(1);
});

console.log(`PostgreSQL data directory: ${pg.dataDir}`);
// The password is never printed (logs are kept and shared): whoever connects reads it from
// the data directory (`embeddedAdminUrl`).
console.log(`POSTGRES_READY ${maskPassword(pg.adminUrl)}`);
