import { z } from 'zod';

/** Each key is an environment variable's name; each schema reads its raw string. */
export type EnvShape = Record<string, z.ZodType<unknown, string | undefined>>;

/** What `parseEnv` returns: every variable parsed, defaults applied. */
export type ParsedEnv<Shape extends EnvShape> = { [Name in keyof Shape]: z.output<Shape[Name]> };

/**
 * Validates a process's environment against its schema, all at once, at start. The first
 * problem is thrown as ONE line naming the variable and what is wrong with it, so a
 * process can print it (`web: cannot start: <line>`) and exit 1 instead of running with a
 * NaN timeout or an empty secret.
 *
 * @example
 * const env = parseEnv({ PORT: integer({ default: 3000, min: 1 }) }, process.env);
 * env.PORT; // 3000 unless PORT is set
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
  return result.data as ParsedEnv<Shape>;
}
