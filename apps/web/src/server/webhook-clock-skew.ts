import { parseEnv, wholeNumber } from '@once/env';

/** Stripe's own default: a signed delivery older than this (by our clock) is refused. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;
/** Above a day the timestamp protects nothing the event-id dedup does not already. */
const MAX_WEBHOOK_TOLERANCE_SECONDS = 86_400;
/**
 * An accepted delivery whose signature time is this far from our clock is logged: a clock
 * drifting toward the tolerance shows up in the logs long before deliveries start failing.
 */
export const WEBHOOK_SKEW_LOG_THRESHOLD_SECONDS = 60;

/** `ONCE_WEBHOOK_TOLERANCE_SECONDS`: how old (by this host's clock) a signature may be. */
export function readWebhookToleranceSeconds(env: Record<string, string | undefined>): number {
  return parseEnv(webhookToleranceEnv, env).ONCE_WEBHOOK_TOLERANCE_SECONDS;
}

export const webhookToleranceEnv = {
  ONCE_WEBHOOK_TOLERANCE_SECONDS: wholeNumber({
    default: DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
    min: 1,
    max: MAX_WEBHOOK_TOLERANCE_SECONDS,
    describe: `a whole number of seconds from 1 to ${MAX_WEBHOOK_TOLERANCE_SECONDS} (default ${DEFAULT_WEBHOOK_TOLERANCE_SECONDS})`,
  }),
};

/** How far the signature's `t=` lies behind this host's clock, in seconds (negative: ahead). */
export function signatureSkewSeconds(header: string, nowMs: number): number | undefined {
  const match = /(?:^|,)\s*t=(\d{1,12})(?:,|$)/.exec(header);
  if (!match) return undefined;
  return Math.floor(nowMs / 1000) - Number(match[1]);
}

export function describeSkew(skewSeconds: number | undefined): string {
  if (skewSeconds === undefined) return 'no signature timestamp';
  return skewSeconds >= 0
    ? `signed ${skewSeconds} s before this host's clock`
    : `signed ${-skewSeconds} s after this host's clock`;
}
