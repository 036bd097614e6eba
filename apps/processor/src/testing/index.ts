// What other packages' tests use to run the processor as a third party (its own process, or
// in the test's process over HTTP): the processor owns how it is started, its database, and
// its admin API.

export type { RunningProcessor } from '../start-processor.ts';
export * from './admin-client.ts';
export * from './processor-database.ts';
export * from './spawn-processor.ts';
export * from './test-processor.ts';
