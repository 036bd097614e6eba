import { ApiError } from '../errors/api-error.ts';
import type { PayInput } from './pay.types.ts';

/** Who is paying, as authentication found them. */
interface Payer {
  auth: 'api_key' | 'session';
  role: 'shopper' | 'operator';
}

/**
 * Refuses a checkout whose input names a capture method unless the merchant sent it (its API
 * key, or an operator session). A shopper's checkout is charged the way the merchant charges
 * (`automatic`): an authorisation a shopper asked for would sit unseen until it expired, and
 * whether to take the money now is the merchant's decision, not the buyer's. Any value is
 * refused, `automatic` too, so a later merchant default cannot be overridden from the page.
 * Thrown inside the guard: the key is released and the shopper may resend without it.
 */
export function requireMerchantForCaptureMethod(payer: Payer, input: PayInput): void {
  if (input.capture === undefined) return;
  if (payer.auth === 'api_key' || payer.role === 'operator') return;
  throw new ApiError(
    'operator_required',
    'The capture method is the merchant’s: a shopper’s checkout may not name one',
    { field: 'capture' },
  );
}
