import { authedProcedure, createTRPCRouter } from '../../trpc.ts';
import { listIdempotencyKeys } from './idempotency-keys.ts';
import { compareWithProcessorLedger } from './ledger.ts';
import { opsListInput } from './list.types.ts';
import { listOutboxJobs } from './outbox.ts';
import { listPayments } from './payments.ts';

/** The operator cockpit's read models; every list is the caller's tenant only. */
export const opsRouter = createTRPCRouter({
  payments: authedProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listPayments({ ctx, input })),
  idempotencyKeys: authedProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listIdempotencyKeys({ ctx, input })),
  outbox: authedProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => listOutboxJobs({ ctx, input })),
  ledger: authedProcedure
    .input(opsListInput)
    .query(({ ctx, input }) => compareWithProcessorLedger({ ctx, input })),
});
