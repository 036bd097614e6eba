import { isIP } from 'node:net';
import { z } from 'zod';

// Field schemas for `parseEnv`. A variable that is unset or empty takes its default; a
// message says what is wrong without the variable's name (parseEnv puts it in front).

function refuse(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER as never;
}

/**
 * An integer variable: unset or empty takes `default`; anything else must be an integer
 * `>= min` (and `<= max` when given), or start is refused with `must be an integer >= min`.
 */
export function integer(options: { default: number; min?: number; max?: number }) {
  const min = options.min ?? 0;
  return z
    .string()
    .optional()
    .transform((raw, ctx): number => {
      if (raw === undefined || raw === '') return options.default;
      const value = Number(raw);
      if (
        !Number.isInteger(value) ||
        value < min ||
        (options.max !== undefined && value > options.max)
      ) {
        const range = options.max === undefined ? `>= ${min}` : `from ${min} to ${options.max}`;
        return refuse(ctx, `must be an integer ${range}, got ${JSON.stringify(raw)}`);
      }
      return value;
    });
}

/**
 * A whole number written as digits only (surrounding spaces ignored): `600`, not `6e2` or
 * `600.0`. `describe` says what it is in the refusal, e.g. `whole number of seconds`.
 */
export function wholeNumber(options: {
  default: number;
  min: number;
  max?: number;
  describe: string;
}) {
  return z
    .string()
    .optional()
    .transform((value, ctx): number => {
      const raw = value?.trim();
      if (!raw) return options.default;
      const parsed = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
      const max = options.max ?? Number.MAX_SAFE_INTEGER;
      if (!(parsed >= options.min && parsed <= max)) {
        return refuse(ctx, `must be ${options.describe}, got ${JSON.stringify(raw)}`);
      }
      return parsed;
    });
}

/** A text variable; unset or empty (after trimming, with `trim`) takes `default`. */
export function text<Default extends string | undefined>(options: {
  default: Default;
  trim?: boolean;
}) {
  return z
    .string()
    .optional()
    .transform((value): string | Default => {
      const raw = options.trim ? value?.trim() : value;
      return raw ? raw : options.default;
    });
}

/**
 * A variable the process cannot run without (a database URL, a secret). Unset or empty is
 * refused with `message`, which should say what to set; production code gives no default
 * for secrets: the demo launcher and the test harness set them.
 */
export function required(message: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx): string => (value ? value : refuse(ctx, message)));
}

/** Every interface: reachable from other containers and hosts, and from this machine. */
export const DEFAULT_BIND_HOST = '0.0.0.0';

/**
 * The address a server listens on. Only IP literals are taken: a name would be resolved
 * once at start and could silently bind somewhere unexpected. The default, 0.0.0.0, works
 * both on a laptop (reach it as 127.0.0.1) and in a container, where 127.0.0.1 is the
 * container's own loopback and nobody else could connect.
 */
export function bindHost() {
  return z
    .string()
    .optional()
    .transform((raw, ctx): string => {
      if (raw === undefined || raw === '') return DEFAULT_BIND_HOST;
      if (isIP(raw) === 0) {
        return refuse(
          ctx,
          `must be an IP address to listen on (0.0.0.0: every interface, 127.0.0.1: this machine only), got ${JSON.stringify(raw)}`,
        );
      }
      return raw;
    });
}

/**
 * A database's pool mode (`DATABASE_POOL_MODE`): unset or `session`, each client connection
 * is a server session; `transaction`, the URL is a transaction-mode pooler (PgBouncer).
 */
export function poolMode() {
  return z
    .string()
    .optional()
    .transform((raw, ctx): 'session' | 'transaction' => {
      if (!raw || raw === 'session') return 'session';
      if (raw === 'transaction') return raw;
      return refuse(
        ctx,
        `must be transaction (the URL is a transaction-mode pooler such as PgBouncer) or session, got ${JSON.stringify(raw)}`,
      );
    });
}
