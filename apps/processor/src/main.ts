import { isPostgresNullSocketWrite } from '@once/db/replaceable-pool';
import { readProcessorConfig } from './config.ts';
import { type RunningProcessor, startProcessor } from './start-processor.ts';

// The processor process (`tsx src/main.ts`): one line per event on stdout, exit 0 on
// SIGTERM/SIGINT after in-flight requests finish.
const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

let running: RunningProcessor | undefined;
// postgres.js 3.4.9 throws from a setImmediate when a backend dies with a write buffered
// (pg_terminate_backend, a PostgreSQL restart; porsager/postgres#1154). That connection may
// never flush again: swap the pool and keep serving (requests on it failed and are retried by
// the client with the same Idempotency-Key). Anything else is a bug: die loudly.
process.on('uncaughtException', (error) => {
  if (isPostgresNullSocketWrite(error)) {
    log('db: postgres.js null-socket write after a dropped connection; replacing the pool');
    running?.replaceDatabasePool('postgres.js null-socket write');
    return;
  }
  log(`crashed: ${error.stack ?? String(error)}`);
  process.exit(1);
});

const processor = await startProcessor({ ...readProcessorConfig(process.env), log });
running = processor;

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight work`);
    // Never hang past the contract's 5 s: what is committed is durable either way.
    const deadline = setTimeout(() => {
      log('shutdown deadline reached, exiting');
      process.exit(0);
    }, 4_500);
    deadline.unref();
    processor.stop().then(
      () => {
        log('stopped');
        process.exit(0);
      },
      (error) => {
        log(`shutdown error: ${String(error)}`);
        process.exit(1);
      },
    );
  });
}
