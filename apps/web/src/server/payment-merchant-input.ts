import { type PayInput, payInput } from '@once/api/checkout';
import { z } from 'zod';

/**
 * What the merchant's REST and GraphQL APIs take to pay: `checkout.pay`'s input with the capture
 * named as Stripe names it, `captureMethod` (`manual`: the confirm only authorises; the
 * merchant captures or cancels later). Default `automatic`.
 */
export const merchantPayInput = payInput
  .omit({ capture: true })
  .extend({ captureMethod: z.enum(['automatic', 'manual']).optional() });
export type MerchantPayInput = z.infer<typeof merchantPayInput>;

/** The merchant's input as `pay` takes it (`captureMethod` is `capture` there). */
export function toPayInput({ captureMethod, ...input }: MerchantPayInput): PayInput {
  return captureMethod === undefined ? input : { ...input, capture: captureMethod };
}
