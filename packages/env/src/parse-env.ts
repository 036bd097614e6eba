import { z } from 'zod';
import { productionSecretProblem, SECRET_VARIABLES } from './secrets.ts';

/** Each key is an environment variable's name; each schema reads its raw string. */
export type EnvShape = Record<string, z.ZodType<unknown, string | undefined>>;

/** What `parseEnv` returns: every variable parsed, defaults applied. */
export type ParsedEnv<Shape extends EnvShape> = { [Name in keyof Shape]: z.output<Shape[Name]> };

/**
 * Validates a process's environment at start; the first problem is thrown as ONE line naming
 * the variable, so the process exits instead of running with a NaN timeout or an empty secret.
 * With `NODE_ENV=production`, every secret variable set in `env` (`SECRET_VARIABLES`), read by
 * this shape or not, is also refused when written in the repository or shorter than 32
 * characters, in a line that never repeats the value.
 */
export function parseEnv<Shape extends EnvShape>(
  shape: Shape,
  env: Record<string, string | undefined>,
): ParsedEnv<Shape> {
  const raw: Record<string, string | undefined> = {};
  for (const name of Object.keys(shape)) raw[name] = env[name];
  const result = z.object(shape).safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const name = String(issue.path[0] ?? '');
    throw new Error(issue.message.startsWith(name) ? issue.message : `${name} ${issue.message}`);
  }
  if (env.NODE_ENV === 'production') refuseWeakSecrets(env);
  return result.data as ParsedEnv<Shape>;
}

/** In production, no secret the process holds may be a known demo value or short (secrets.ts). */
function refuseWeakSecrets(env: Record<string, string | undefined>): void {
  for (const name of SECRET_VARIABLES) {
    const value = env[name];
    if (!value) continue;
    const problem = productionSecretProblem(name, value);
    if (problem) throw new Error(problem);
  }
}
