import { readProcessorConfig } from './config.ts';
import { startProcessor } from './start-processor.ts';

// The processor process (`tsx src/main.ts`): one line per event on stdout, exit 0 on
// SIGTERM/SIGINT after in-flight requests finish.
const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

const processor = await startProcessor({ ...readProcessorConfig(process.env), log });

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
