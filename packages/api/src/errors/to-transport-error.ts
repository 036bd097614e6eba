import { TRPCError } from '@trpc/server';
import {
  CHECKOUT_PROBLEM_TYPE_BASE,
  type CheckoutError,
  isCheckoutError,
} from './checkout-error.ts';

/**
 * CheckoutError -> TRPCError. The CheckoutError stays the `cause`, so the error formatter can
 * expose its stable `code` and `details`.
 */
export function toTRPCError(error: unknown): unknown {
  if (!isCheckoutError(error)) return error;
  return new TRPCError({ code: error.trpcCode, message: error.message, cause: error });
}

/**
 * CheckoutError -> RFC 9457 `application/problem+json` response for the REST routes.
 *
 * @example
 * catch (e) { if (isCheckoutError(e)) return checkoutProblemResponse(e); throw e; }
 */
export function checkoutProblemResponse(error: CheckoutError): Response {
  return new Response(
    JSON.stringify({
      type: `${CHECKOUT_PROBLEM_TYPE_BASE}${error.code}`,
      title: error.message,
      status: error.status,
      code: error.code,
      ...(error.details ? { details: error.details } : {}),
    }),
    { status: error.status, headers: { 'content-type': 'application/problem+json' } },
  );
}
