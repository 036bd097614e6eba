export { actionDownstreamKeyFor, paymentActionIdFor } from './action-ids.ts';
export {
  type ApplyOutcome,
  applyProcessorEvent,
  authorizationExpired,
  handledProcessorEventTypes,
  type ProcessorPaymentIntentEvent,
} from './apply-processor-event.ts';
export { chargeMatchesPayment, type Money } from './charge-amount.ts';
export { confirmedEventOf, type ProcessorPaymentIntent } from './confirmed-intent-event.ts';
export {
  declineCodeOf,
  FALLBACK_DECLINE_CODE,
  type ProcessorDeclineError,
} from './decline-code.ts';
export { importProcessorRefunds, type ListedProcessorRefund } from './import-processor-refunds.ts';
export {
  cancelKeyFor,
  confirmKeyFor,
  downstreamKeyFor,
  newJobId,
  newPaymentId,
} from './payment-ids.ts';
export {
  canMovePayment,
  isTerminalPayment,
  type PaymentStatus,
  paymentStatuses,
  paymentTransitions,
  statusesMovableTo,
  terminalPaymentStatuses,
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
export {
  canRecordRefund,
  refundStatusesRecordableAs,
  refundStatusOfProcessor,
} from './refund-states.ts';
export {
  type PaymentRef,
  type PaymentSettlement,
  type SettleOptions,
  settlePayment,
} from './settle-payment.ts';
export { isAuthenticationFailure } from './three-d-secure-failure.ts';
