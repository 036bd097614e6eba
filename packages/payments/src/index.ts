export { actionDownstreamKeyFor, paymentActionIdFor } from './action-ids.ts';
export {
  type ApplyOutcome,
  applyProcessorEvent,
  authorizationExpired,
  handledProcessorEventTypes,
  type ProcessorPaymentIntentEvent,
} from './apply-processor-event.ts';
export { chargeMatchesPayment, type Money } from './charge-amount.ts';
export { confirmedEventOf } from './confirmed-intent-event.ts';
export { declineCodeOf } from './decline-code.ts';
export { importProcessorRefunds, type ListedProcessorRefund } from './import-processor-refunds.ts';
export {
  cancelKeyFor,
  confirmKeyFor,
  downstreamKeyFor,
  newJobId,
  newPaymentId,
} from './payment-ids.ts';
export {
  isTerminalPayment,
  unsettledPaymentStatuses,
} from './payment-states.ts';
export {
  isRefundEventType,
  type ProcessorRefund,
  type RefundMove,
  recordProcessorRefunds,
  refundEventTypes,
} from './record-processor-refunds.ts';
export { refundDownstreamKeyFor, refundIdFor } from './refund-ids.ts';
export { refundStatusesRecordableAs } from './refund-states.ts';
export { type PaymentRef, type PaymentSettlement, settlePayment } from './settle-payment.ts';
export { isAuthenticationFailure } from './three-d-secure-failure.ts';
