// Public face of the Postgres store: DDL, store factory, and the worker's maintenance jobs (the
// tables are `./drizzle/schema`).
export type { AnswerEncryption } from './answer-codec.ts';
export type { TransactionOf } from './drizzle-types.ts';
export { type KeyMaintenanceOptions, startKeyMaintenance } from './maintenance.ts';
export { checkIdempotencyTables } from './missing-tables.ts';
export { type ReapOptions, reapExpiredKeys } from './reaper.ts';
export { resolveUnknownKey } from './resolve-unknown.ts';
export { idempotencySchemaSql } from './schema-sql.ts';
export { createDrizzleStore } from './store.ts';
export { type SweepOptions, sweepExpiredLeases } from './sweeper.ts';
