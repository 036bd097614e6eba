// @once/api/money-actions: the one business function per money action (capture, void, refund)
// that every transport adapts (the operators' tRPC mutations, the merchant's REST routes and
// GraphQL mutations), and a payment and its refunds as a merchant reads them.

export {
  capturePaymentInput,
  type PaymentActionResult,
  voidPaymentInput,
} from './authorization-action.types.ts';
export { type MerchantPayment, readMerchantPayment } from './merchant-payment.ts';
export { listMerchantRefunds, merchantRefundOf } from './merchant-refund.ts';
export { type MoneyActionContext, requestKeyOf } from './money-action-context.ts';
export { refundPayment } from './refund-payment.ts';
export { type RefundResult, refundPaymentInput } from './refund-payment.types.ts';
export { requestAuthorizationAction } from './request-authorization-action.ts';
