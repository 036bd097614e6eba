import { TRPCError } from '@trpc/server';

/** What a client learns from a refused call: the tRPC code and the stable code in `data.code`. */
export interface Refusal {
  trpc: string;
  /** The stable code the errorFormatter derives: the cause's code, else the tRPC code. */
  code: string;
}

function causeOf(error: unknown): { code?: string; details?: Record<string, unknown> } | undefined {
  if (!(error instanceof TRPCError)) throw error;
  return error.cause as { code?: string; details?: Record<string, unknown> } | undefined;
}

/** The refusal a caller's error carries; rethrows anything that is not a `TRPCError`. */
export function refusalOf(error: unknown): Refusal {
  const cause = causeOf(error);
  const trpc = (error as TRPCError).code;
  return { trpc, code: cause?.code ?? trpc };
}

/** The error a call rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

/** The refusal a call rejects with; fails the test if it resolves or rejects otherwise. */
export async function refusal(promise: Promise<unknown>): Promise<Refusal> {
  return refusalOf(await rejection(promise));
}

/** `refusal`, with the cause's `details` (a limit, a Retry-After) as the client sees them. */
export async function detailedRefusal(
  promise: Promise<unknown>,
): Promise<Refusal & { details: Record<string, unknown> | undefined }> {
  const error = await rejection(promise);
  return { ...refusalOf(error), details: causeOf(error)?.details };
}
