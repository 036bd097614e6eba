// Temporary: e2e/chaos/once-target.ts still imports this path. Delete once it imports
// `@once/postgres` (the code moved to packages/postgres).
export { ensureDatabase, findFreePort } from '@once/postgres';
