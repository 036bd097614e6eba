import type { PaymentStatus } from '@once/db/schema';
import { z } from 'zod';
import type { LedgerVerdict, ProcessorSide } from './ledger.types.ts';

export const paymentTimelineInput = z.object({ paymentId: z.string().min(1).max(100) });
export type PaymentTimelineInput = z.infer<typeof paymentTimelineInput>;

/** One recorded fact of the payment's life (see `payment_events`). */
interface TimelineEvent {
  seq: number;
  /** ISO time, database clock. */
  at: string;
  /** The lane: `browser`, `api_client`, `web`, `worker:<id>`, `processor`, `webhook`, `reconciler`. */
  actor: string;
  kind: string;
  detail: Record<string, unknown>;
}

export interface PaymentTimeline {
  payment: {
    paymentId: string;
    status: PaymentStatus;
    amount: number;
    currency: string;
    idempotencyKey: string;
    downstreamKey: string;
    processorPaymentIntentId: string | null;
    reconcileChecks: number;
    createdAt: string;
    updatedAt: string;
  };
  /** Oldest first. */
  events: TimelineEvent[];
  /** The processor's ledger on this payment, as `ops.ledger` judges it. */
  ledger: {
    processor: 'reachable' | 'unreachable' | 'no_account';
    processorError: string | null;
    side: ProcessorSide | null;
    verdict: LedgerVerdict;
    reason: string;
    checkedAt: string;
  };
}
