export * from './demo-connection.ts';
export * from './verify-invariant.ts';
