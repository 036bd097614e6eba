import type { OutboxJobKind } from '../schema/outbox.ts';

/** What a charge job carries: the worker reads `paymentMethod`; amount and currency are for operators. */
export interface ChargePaymentPayload {
  amount: number;
  currency: string;
  paymentMethod?: string;
  /** `manual`: confirm only authorises (`capture_method: manual`). Absent: automatic. */
  captureMethod?: 'manual';
}

/**
 * What each kind of job carries in `payload`, by kind. A new kind (capture, cancel, refund) is
 * a name in `outboxJobKinds` and its payload here (this type refuses a kind without one); the
 * worker's handler table then does not type-check until it routes the new kind.
 */
export type OutboxJobPayloads = PayloadsOfEveryKind<{
  charge_payment: ChargePaymentPayload;
  /** Its action, and a partial amount (absent: all authorised). */
  capture_payment: { actionId: string; amountToCapture?: number };
  /** Its action. */
  void_payment: { actionId: string };
  /** Its refund (amount and reason are on the refund's row). */
  refund_payment: { refundId: string };
}>;

type PayloadsOfEveryKind<T extends Record<OutboxJobKind, object>> = T;
