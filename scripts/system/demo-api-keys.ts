import { randomBytes } from 'node:crypto';
import { DEMO_API_KEY_VARIABLES } from '@once/env';

type DemoApiKeyVariable = (typeof DEMO_API_KEY_VARIABLES)[number];

/**
 * The demo merchants' API keys for one run of `npm run demo`: each one given in `env` is kept,
 * every other one is made fresh (`once_demo_` + 192 random bits), so the demo never opens with
 * a key written in the repository (the web's seed replaces the stored hashes at start).
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
