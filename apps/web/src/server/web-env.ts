import { readAnswerEncryption, readApiEnv } from '@once/api';
import { demoTenantsWithApiKeys, publicDemoKeyProblem } from '@once/db/seed';
import { bindHost, databaseFields, databaseSettings, parseEnv, required, text } from '@once/env';
import { webhookToleranceEnv } from './webhook-clock-skew.ts';

/**
 * The web runtime's environment (docs/process-contract.md), validated at start. No secret
 * has a default here: the demo launcher and the test harness set them, and a start without
 * SESSION_SECRET is refused.
 */
const webEnv = {
  ...databaseFields(
    '',
    'DATABASE_URL is not set. Start the system with `npm run demo` (it starts an embedded ' +
      'PostgreSQL) or set DATABASE_URL to your own PostgreSQL.',
  ),
  SESSION_SECRET: required(
    'SESSION_SECRET is not set: set a random string of at least 16 characters (`npm run demo` sets one)',
  ),
  /** Unset: every webhook is refused (503). */
  PROCESSOR_WEBHOOK_SECRET: text({ default: undefined }),
  ONCE_SEED_DEMO: text({ default: '1' }),
  ONCE_DEMO_LOGIN: text({ default: '1' }),
  /** The demo merchants' API keys; unset: their public test keys (loopback only in production). */
  ONCE_DEMO_API_KEY_TENANT_A: text({ default: undefined }),
  ONCE_DEMO_API_KEY_TENANT_B: text({ default: undefined }),
  /** Read here only to know who can reach the server (web-server-config.ts binds it). */
  HOST: bindHost(),
  ONCE_TRUST_PROXY: text({ default: '0' }),
  ...webhookToleranceEnv,
};

/** 127.0.0.0/8 and ::1: only this machine's users connect. */
function isLoopback(host: string): boolean {
  return /^(::ffff:)?127\./.test(host) || host === '::1';
}

/**
 * Reads `webEnv` (and checks the API's variables, so a bad one refuses the start). The process
 * calls it at start (`process/main.ts`), the runtime again when it is built.
 *
 * @example
 * readWebEnv({ DATABASE_URL: url, SESSION_SECRET: secret }).seedDemo; // true
 */
export function readWebEnv(env: Record<string, string | undefined> = process.env) {
  const e = parseEnv(webEnv, env);
  readApiEnv(env);
  const seedDemo = e.ONCE_SEED_DEMO !== '0';
  const demoTenants = demoTenantsWithApiKeys({
    tenant_a: e.ONCE_DEMO_API_KEY_TENANT_A,
    tenant_b: e.ONCE_DEMO_API_KEY_TENANT_B,
  });
  // The public test keys open a production server only on loopback with no proxy in front:
  // `npm run demo`. Anywhere else a deployment brings its own keys or no demo merchants.
  const onlyThisMachine = isLoopback(e.HOST) && e.ONCE_TRUST_PROXY !== '1';
  if (seedDemo && env.NODE_ENV === 'production' && !onlyThisMachine) {
    const problem = publicDemoKeyProblem(demoTenants, 'ONCE_SEED_DEMO=0 (no demo merchants)');
    if (problem) throw new Error(problem);
  }
  return {
    // The direct URL carries migrations only: the web LISTENs to nothing.
    ...databaseSettings(e, '', 'migrations'),
    sessionSecret: e.SESSION_SECRET,
    webhookSecret: e.PROCESSOR_WEBHOOK_SECRET,
    answerEncryption: readAnswerEncryption(env),
    webhookToleranceSeconds: e.ONCE_WEBHOOK_TOLERANCE_SECONDS,
    seedDemo,
    demoTenants,
    // Picking a demo tenant without a credential only makes sense where demo data exists.
    allowDemoLogin: seedDemo && e.ONCE_DEMO_LOGIN !== '0',
  };
}
