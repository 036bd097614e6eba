export * from './database-clock.ts';
export * from './pgbouncer.ts';
export * from './test-database.ts';
