export * from './api-key.ts';
export * from './client.ts';
export * from './migrate.ts';
export * as schema from './schema/index.ts';
