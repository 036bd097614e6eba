// The application schema: what drizzle-kit generates migrations from (`npm run db:generate`).
// The idempotency tables live in the application database so that a payment and its key's
// stored response commit in one transaction.
export {
  idempotencyKeyAudit,
  idempotencyKeys,
  idempotencyRateLimits,
} from '@once/idempotency/drizzle/schema';
export * from './catalogue.ts';
export * from './money-action-keys.ts';
export * from './operator-sessions.ts';
export * from './outbox.ts';
export * from './payment-actions.ts';
export * from './payment-events.ts';
export * from './payments.ts';
export * from './refunds.ts';
export * from './tenants.ts';
