// @once/api/checkout: the one guarded `pay` every transport adapts, and a payment's view.

export { checkoutFingerprint, normalisePayInput } from './checkout-fingerprint.ts';
export { type PayIdempotency, type PayOrigin, pay } from './pay.ts';
export { PAY_INPUT_LIMITS, type PayInput, type PayResult, payInput } from './pay.types.ts';
export {
  PAY_OPERATIONS,
  type PayTransport,
  recordGuardAnswer,
} from './pay-attempt-events.ts';
export { status as paymentStatus, toPaymentView } from './status.ts';
export type { PaymentView } from './status.types.ts';
