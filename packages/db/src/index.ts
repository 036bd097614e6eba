export * from './api-key.ts';
export * from './client.ts';
export * from './migrate.ts';
export * from './postgres-pool.ts';
export * from './replaceable-pool.ts';
export * as schema from './schema/index.ts';
export * from './transient-error.ts';
