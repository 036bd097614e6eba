import { randomBytes } from 'node:crypto';
import { DEMO_API_KEY_VARIABLES } from '@once/env';

type DemoApiKeyVariable = (typeof DEMO_API_KEY_VARIABLES)[number];

/**
 * The demo merchants' API keys for one run of `npm run demo`: each one given in `env`
 * (ONCE_DEMO_API_KEY_TENANT_A / _B, a deployment's own) is kept, every other one is made
 * fresh (`once_demo_` + 192 random bits). An API key is a merchant credential (the REST and
 * GraphQL APIs, the cockpit's sign-in), so the demo never opens with a key written in the
 * repository: the launcher prints this run's keys, and the web's seed replaces the stored
 * hashes at start, which ends the last run's keys and the sessions they opened.
 *
 * @example
 * demoApiKeysForRun({}); // { ONCE_DEMO_API_KEY_TENANT_A: 'once_demo_k3J9...', ONCE_DEMO_API_KEY_TENANT_B: '...' }
 */
export function demoApiKeysForRun(
  env: Record<string, string | undefined>,
): Record<DemoApiKeyVariable, string> {
  const keys = {} as Record<DemoApiKeyVariable, string>;
  for (const variable of DEMO_API_KEY_VARIABLES) {
    keys[variable] = env[variable]?.trim() || `once_demo_${randomBytes(24).toString('base64url')}`;
  }
  return keys;
}
