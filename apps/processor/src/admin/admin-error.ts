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
