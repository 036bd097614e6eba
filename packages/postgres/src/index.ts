// General PostgreSQL plumbing, no schema: pools with timeouts, the replaceable pool and the
// postgres.js defects it survives, which errors are worth retrying, the migration runner,
// and cluster helpers. Embedded PostgreSQL is `@once/postgres/embedded`; throw-away test
// databases are `@once/postgres/testing`.
export * from './crash-policy.ts';
export { applyMigrations } from './migration-runner.ts';
export { subscribePoolNotices } from './pool-notices.ts';
export * from './postgres-admin.ts';
export * from './postgres-pool.ts';
export * from './process-alive.ts';
export {
  isPostgresNullSocketWrite,
  openReplaceablePool,
  type PoolLog,
} from './replaceable-pool.ts';
export { retrySerializationFailures } from './serialization-retry.ts';
export { errorCodes, HUNG_QUERY_CODE, isTransientDatabaseError } from './transient-error.ts';
