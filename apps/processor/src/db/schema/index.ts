// The processor's schema: what drizzle-kit generates apps/processor/drizzle from.
export * from './accounts.ts';
export * from './charges.ts';
export * from './faults.ts';
export * from './ledger.ts';
export * from './payment-intents.ts';
export * from './refunds.ts';
export * from './webhook-events.ts';
