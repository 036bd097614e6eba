export * from './allowed-host.ts';
export * from './env-fields.ts';
export * from './parse-env.ts';
export * from './secrets.ts';
