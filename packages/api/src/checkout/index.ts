// @once/api/checkout: the one guarded `pay` every transport adapts, and a payment's view.

export { checkoutFingerprint, normalisePayInput } from './checkout-fingerprint.ts';
export { type PayOrigin, pay } from './pay.ts';
export { type PayInput, type PayResult, payInput } from './pay.types.ts';
export {
  PAY_OPERATIONS,
  type PayTransport,
  recordGuardAnswer,
} from './pay-attempt-events.ts';
export { status as paymentStatus } from './status.ts';
