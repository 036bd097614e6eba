import { ApiError } from '@once/api/errors';
import type { z } from 'zod';
import { API_MAX_BODY_BYTES, readTextWithinLimit } from './body-limit.ts';

/** The one media type the payment routes read. */
const JSON_MEDIA_TYPE = 'application/json';

/**
 * Whether `Content-Type` is `application/json` (any case, optional `charset=utf-8`): the only
 * body the routes parse. Anything else would be fingerprinted one way and parsed another.
 */
function isJsonContentType(header: string | null): boolean {
  if (header === null) return false;
  const [type, ...params] = header.split(';');
  if (type!.trim().toLowerCase() !== JSON_MEDIA_TYPE) return false;
  return params.every((param) => {
    const [name, value = ''] = param.split('=');
    if (name!.trim().toLowerCase() !== 'charset') return true;
    return value.trim().replace(/^"|"$/g, '').toLowerCase() === 'utf-8';
  });
}

/**
 * Refuses (415 `unsupported_media_type`) a request whose body is not `application/json`.
 */
export function requireJsonContentType(request: Request, route: string): void {
  if (isJsonContentType(request.headers.get('content-type'))) return;
  throw new ApiError(
    'unsupported_media_type',
    `${route} accepts only Content-Type: ${JSON_MEDIA_TYPE}`,
    { accepted: [JSON_MEDIA_TYPE] },
  );
}

/**
 * The body, read ONCE within {@link API_MAX_BODY_BYTES}, parsed as JSON and validated by
 * `schema` (400 `invalid_input`, with zod's issues). With `optional`, an empty body is `{}`
 * (a capture of everything, a cancel) and only a body that is there must be JSON (415).
 */
export async function readJsonBody<T>(
  request: Request,
  schema: z.ZodType<T>,
  { route, optional = false }: { route: string; optional?: boolean },
): Promise<T> {
  const text = await readTextWithinLimit(request, API_MAX_BODY_BYTES);
  let body: unknown = {};
  if (!optional || text !== '') {
    requireJsonContentType(request, route);
    try {
      body = JSON.parse(text);
    } catch {
      throw new ApiError('invalid_input', 'The body must be JSON');
    }
  }
  return parseInput(schema, body);
}

/**
 * `value` by the business input's own rules: 400 `invalid_input` with zod's issues.
 */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ApiError('invalid_input', 'Invalid input', { issues: parsed.error.issues });
  }
  return parsed.data;
}
