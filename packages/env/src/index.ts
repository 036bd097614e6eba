export * from './env-fields.ts';
export * from './parse-env.ts';
