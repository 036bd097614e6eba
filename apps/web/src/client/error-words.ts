import { TRPCClientError } from '@trpc/client';

/**
 * What a page says when a call other than the payment fails: worded from the error's stable
 * code or status, never its text, which may be the server's SQL or the browser's own words.
 */
export function errorWords(error: unknown): string {
  const answer = answerOf(error);
  if (!answer) return UNREACHABLE;
  if (answer.code === 'idempotency_store_unavailable' || answer.status === 503) return UNAVAILABLE;
  if (answer.status === 429) return 'Too many attempts. Try again in a moment.';
  if (answer.status === 401) return 'You are not signed in.';
  if (answer.status === 403) return FORBIDDEN[answer.code ?? ''] ?? refused(answer.code);
  return SOMETHING_WENT_WRONG;
}

/** Whether the server answered at all: a 403 is not "the server did not answer". */
export function answeredByServer(error: unknown): boolean {
  return answerOf(error) !== undefined;
}

/**
 * The status and code of the server's answer: tRPC's envelope, or the HTTP response itself (the
 * host guard answers problem+json before tRPC runs). Undefined: no answer came.
 */
function answerOf(error: unknown): { status?: number; code?: string } | undefined {
  if (!(error instanceof TRPCClientError)) return undefined;
  const data = (error.data ?? undefined) as { code?: string; httpStatus?: number } | undefined;
  if (data) return { status: data.httpStatus, code: data.code };
  const meta = (error.meta ?? {}) as {
    response?: { status?: number };
    responseJSON?: { code?: unknown };
  };
  const status = meta.response?.status;
  if (typeof status !== 'number' || status === 0) return undefined;
  const code = meta.responseJSON?.code;
  return { status, ...(typeof code === 'string' ? { code } : {}) };
}

/** What a 403 refused, by its stable code. */
const FORBIDDEN: Record<string, string> = {
  operator_required:
    "Refused (403 operator_required): this browser's session is a shopper's; sign in as the operator.",
  operator_code_required:
    'Refused (403 operator_code_required): only a session the operator code signed in may do this.',
  host_not_allowed:
    'Refused (403 host_not_allowed): the web server answers only to its own address; open the URL the launcher printed.',
};
const refused = (code: string | undefined) =>
  `Refused by the server (403${code ? ` ${code}` : ''}).`;

const UNREACHABLE = 'The server could not be reached. Check your connection and try again.';
const UNAVAILABLE =
  'The service is briefly unavailable (its database is restarting). Try again in a moment.';
const SOMETHING_WENT_WRONG = 'Something went wrong on our side. Try again.';
