export { configuredHostNames, HOST_NOT_ALLOWED, hostAllowed } from './allowed-host.ts';
export { databaseFields, databaseSettings } from './database-env.ts';
export {
  bindHost,
  DEFAULT_BIND_HOST,
  integer,
  required,
  text,
  wholeNumber,
} from './env-fields.ts';
export { parseEnv } from './parse-env.ts';
export {
  DEMO_API_KEY_VARIABLES,
  generateSecrets,
  KNOWN_DEMO_SECRETS,
  MIN_PRODUCTION_SECRET_LENGTH,
  SECRET_VARIABLES,
} from './secrets.ts';
