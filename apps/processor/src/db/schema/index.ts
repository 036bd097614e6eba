// The processor's schema: what drizzle-kit generates apps/processor/drizzle from.

// The idempotency store's tables live in this database too, so a charge, its ledger row
// and the stored idempotent response commit in one transaction.
export { idempotencyKeys, idempotencyRateLimits } from '@once/idempotency/drizzle/schema';
export * from './accounts.ts';
export * from './charges.ts';
export * from './faults.ts';
export * from './ledger.ts';
export * from './payment-intents.ts';
export * from './refunds.ts';
export * from './webhook-events.ts';
