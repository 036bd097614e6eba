// The application's schema: what drizzle-kit generates migrations from (`npm run db:generate`).
export * from './catalogue.ts';
export * from './outbox.ts';
export * from './payments.ts';
export * from './tenants.ts';
// The idempotency tables come from @once/idempotency (added once the package exports them).
