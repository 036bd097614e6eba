import { randomBytes } from 'node:crypto';

// The one home of what Once treats as a secret, what a production start refuses as one,
// and how a fresh one is made (the demo launcher and the compose tests use it; the shell
// one-liner scripts/compose-secrets.sh does the same with openssl).

/** The secrets the processes share, made fresh by every launcher run (`generateSecrets`). */
const PROCESS_SECRET_VARIABLES = [
  /** HMAC key of the operator's and the shopper's session cookie (web). */
  'SESSION_SECRET',
  /** Signs the processor's webhooks; the web verifies them with it (web, processor). */
  'PROCESSOR_WEBHOOK_SECRET',
  /** Opens the processor's admin API: its ledger and its fault switches (web, processor). */
  'PROCESSOR_ADMIN_TOKEN',
  /** AES-256 key of the stored idempotent answers (web, worker): 64 hex characters, 256 bits. */
  'ONCE_ANSWER_KEY',
] as const;

/**
 * The demo merchants' REST API keys, which also sign a browser in as their operator (the
 * demo seed: migrate --seed-demo, web). Compose gets them from `.env`; unset, the seed uses
 * the public test keys, which only `npm run demo` on loopback and the tests may (production
 * refuses them, see packages/db/src/seed.ts).
 */
export const DEMO_API_KEY_VARIABLES = [
  'ONCE_DEMO_API_KEY_TENANT_A',
  'ONCE_DEMO_API_KEY_TENANT_B',
] as const;

/** The variables that hold a secret: with them anyone could forge what they protect. */
export const SECRET_VARIABLES = [...PROCESS_SECRET_VARIABLES, ...DEMO_API_KEY_VARIABLES] as const;

type ProcessSecretVariable = (typeof PROCESS_SECRET_VARIABLES)[number];

/**
 * Values that were once written in this repository as the deployment's secrets (the demo
 * launcher's and docker-compose.yml's), or still are, in test harnesses: anyone who read the
 * repository knows them. A production start refuses each of them, whatever its length.
 */
export const KNOWN_DEMO_SECRETS: readonly string[] = [
  'once-demo-session-secret',
  'whsec_once_demo',
  'once-admin',
  'once-bench-admin',
  // The demo merchants' public test API keys (packages/db/src/seed.ts): `npm run demo` on
  // loopback and the tests use them; a deployment is given its own.
  'once_test_tenant_a',
  'once_test_tenant_b',
];

/** 32 characters: 128 bits of hex, the least a production secret may have. */
export const MIN_PRODUCTION_SECRET_LENGTH = 32;

const HOW_TO_GENERATE =
  'generate one with `openssl rand -hex 32` (`sh scripts/compose-secrets.sh` writes every secret Once needs to .env)';

/**
 * Why `value` cannot be `name` in production, as one line that never repeats the value,
 * or undefined when it may. Unset is for the variable's own schema to refuse or allow.
 */
export function productionSecretProblem(name: string, value: string): string | undefined {
  if (KNOWN_DEMO_SECRETS.includes(value.trim())) {
    return `${name} is a demo value written in the repository, refused with NODE_ENV=production: ${HOW_TO_GENERATE}`;
  }
  if (value.length < MIN_PRODUCTION_SECRET_LENGTH) {
    return `${name} is ${value.length} characters, too short for NODE_ENV=production (at least ${MIN_PRODUCTION_SECRET_LENGTH}): ${HOW_TO_GENERATE}`;
  }
  return undefined;
}

/**
 * A fresh random value for every secret the processes share (256 bits each, hex; the webhook
 * secret with Stripe's `whsec_` prefix). `npm run demo` makes a new set per run. Not the
 * demo merchants' API keys: the demo keeps their public test keys, on loopback only.
 */
export function generateSecrets(): Record<ProcessSecretVariable, string> {
  const fresh = () => randomBytes(32).toString('hex');
  return {
    SESSION_SECRET: fresh(),
    PROCESSOR_WEBHOOK_SECRET: `whsec_${fresh()}`,
    PROCESSOR_ADMIN_TOKEN: fresh(),
    ONCE_ANSWER_KEY: fresh(),
  };
}
