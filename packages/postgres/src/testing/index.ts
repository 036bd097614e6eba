export * from './pgbouncer.ts';
export * from './test-database.ts';
