// @once/api/checkout: the one guarded `pay` every transport adapts.

export { normalisePayInput } from './checkout-fingerprint.ts';
export { type PayOrigin, pay } from './pay.ts';
export { type PayInput, type PayResult, payInput } from './pay.types.ts';
export { PAY_OPERATIONS, recordGuardAnswer } from './pay-attempt-events.ts';
