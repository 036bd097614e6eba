import { createTRPCRouter, operatorProcedure } from '../../trpc.ts';
import { chaosPressInput } from './chaos.types.ts';
import { chaosPress } from './chaos-press.ts';
import { chaosStatus } from './chaos-status.ts';
import { listIdempotencyKeys } from './idempotency-keys.ts';
import { compareWithProcessorLedger } from './ledger.ts';
import { opsListInput } from './list.types.ts';
import { listOutboxJobs } from './outbox.ts';
import { paymentTimeline } from './payment-timeline.ts';
import { paymentTimelineInput } from './payment-timeline.types.ts';
import { listPayments } from './payments.ts';
import { countStuckPayments, stuckPaymentsInput } from './stuck-payments.ts';

/**
 * The operator cockpit's read models; every list is the caller's tenant only, and only an
 * operator (operator session, the merchant's API key) may read them: they show every
 * shopper's payments, emails and keys.
 */
export const opsRouter = createTRPCRouter({
  payments: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listPayments({ ctx, input })),
  idempotencyKeys: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listIdempotencyKeys({ ctx, input })),
  outbox: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listOutboxJobs({ ctx, input })),
  ledger: operatorProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => compareWithProcessorLedger({ ctx, input })),
  paymentTimeline: operatorProcedure
    .input(paymentTimelineInput)
    .query(({ ctx, input }) => paymentTimeline({ ctx, input })),
  stuckPayments: operatorProcedure
    .input(stuckPaymentsInput)
    .query(({ ctx, input }) => countStuckPayments({ ctx, input })),
  /** Demo only: the chaos switches and the parts' state (`{ enabled: false }` otherwise). */
  chaosStatus: operatorProcedure.query(({ ctx }) => chaosStatus({ ctx })),
  /** Demo only: presses one chaos switch; refused unless the launcher enabled them. */
  chaosPress: operatorProcedure
    .input(chaosPressInput)
    .mutation(({ ctx, input }) => chaosPress({ ctx, input })),
});
