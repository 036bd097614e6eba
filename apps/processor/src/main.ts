import { readProcessorConfig } from './config.ts';
import { installCrashPolicy } from './crash-policy.ts';
import { type RunningProcessor, startProcessor } from './start-processor.ts';

// The processor process (`tsx src/main.ts`): one line per event on stdout, exit 0 on
// SIGTERM/SIGINT after in-flight requests finish.
const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

let running: RunningProcessor | undefined;
// Installed before anything touches the database: the driver's survivable failures (see
// crash-policy.ts) can fire during migrations and seeding too.
installCrashPolicy({
  log,
  replaceDatabasePool: (reason) => running?.replaceDatabasePool(reason),
});

// Before startup work: a SIGTERM while migrating or seeding exits 0 (nothing is served yet,
// an interrupted migration is rolled back by the server) instead of dying by the signal.
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    if (!running) {
      log(`${signal} during startup: stopped`);
      process.exit(0);
    }
    log(`${signal}: finishing in-flight work`);
    // Never hang past the contract's 5 s: what is committed is durable either way.
    const deadline = setTimeout(() => {
      log('shutdown deadline reached, exiting');
      process.exit(0);
    }, 4_500);
    deadline.unref();
    running.stop().then(
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

// A bad setting (HOST, PORT, PROCESSOR_DATABASE_URL, a window that breaks its inequality) is
// refused in one line saying what to fix, not a stack trace.
try {
  running = await startProcessor({ ...readProcessorConfig(process.env), log });
} catch (error) {
  console.error(`processor: cannot start: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
