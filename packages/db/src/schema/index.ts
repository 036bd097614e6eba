// The application's schema: what drizzle-kit generates migrations from.
export * from './tenants.ts';
