/** A refusal of the admin API with its HTTP status; rendered as `{ error: { message } }`. */
export class AdminError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

export const adminError = (error: AdminError) =>
  Response.json({ error: { message: error.message } }, { status: error.status });

/** A list's `limit` query parameter: 1 to 100, undefined when unset. */
export function readAdminLimit(limit: string | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (!/^(100|[1-9][0-9]?)$/.test(limit)) {
    throw new AdminError(400, 'limit must be an integer from 1 to 100.');
  }
  return Number(limit);
}
