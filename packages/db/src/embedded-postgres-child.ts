// Temporary: e2e/chaos/once-target.ts still imports this path. Delete once it imports
// `@once/postgres/embedded` (the code moved to packages/postgres).
export * from '@once/postgres/embedded';
