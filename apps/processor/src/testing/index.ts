// What other packages' tests use to run the processor as a third party: the processor owns
// how it is started, its database, and its admin API.
export * from './admin-client.ts';
export * from './processor-database.ts';
export * from './spawn-processor.ts';
