export * from './verify-invariant.ts';
