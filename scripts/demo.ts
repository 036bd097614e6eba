/**
 * `npm run demo`: the whole system on this machine, each part its own process.
 * PostgreSQL is embedded (data kept in .data/postgres between runs) unless DATABASE_URL
 * is set. Ctrl-C stops everything, the database last.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot, startSystem } from './system/start-system.ts';

const { values } = parseArgs({
  options: {
    dev: { type: 'boolean', default: false },
    workers: { type: 'string', default: '2' },
    'skip-build': { type: 'boolean', default: false },
  },
});

const webPort = Number(process.env.ONCE_WEB_PORT ?? 3000);
let shuttingDown = false;
let system: Awaited<ReturnType<typeof startSystem>> | undefined;

async function shutdown(code: number, reason: string): Promise<never> {
  if (!shuttingDown) {
    shuttingDown = true;
    console.log(`\nstopping Once (${reason}) ...`);
    await system?.stop();
    console.log('all processes stopped');
  }
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0, 'Ctrl-C'));
process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));

try {
  system = await startSystem({
    databaseUrl: process.env.DATABASE_URL || undefined,
    processorDatabaseUrl: process.env.PROCESSOR_DATABASE_URL || undefined,
    pgDataDir: path.join(repoRoot, '.data/postgres'),
    pgPort: Number(process.env.ONCE_PG_PORT ?? 25432),
    webPort,
    processorPort: Number(process.env.ONCE_PROCESSOR_PORT ?? 4100),
    workerCount: Number(values.workers),
    webMode: values.dev ? 'dev' : 'start',
    skipBuild: values['skip-build'],
    onUnexpectedExit: (name, code) => void shutdown(1, `${name} exited with code ${code}`),
  });
} catch (error) {
  console.error(`\nOnce failed to start: ${error instanceof Error ? error.message : error}`);
  await shutdown(1, 'start failed');
}

const database = process.env.DATABASE_URL
  ? 'your PostgreSQL (DATABASE_URL)'
  : 'embedded PostgreSQL (.data/postgres)';
console.log(`
  Once is running on ${database}.

    Checkout    http://localhost:${webPort}/
    Operator    http://localhost:${webPort}/ops
    Processor   ${system!.processorUrl}  (mock Stripe API; admin at /admin)

  Press Ctrl-C to stop.
`);
