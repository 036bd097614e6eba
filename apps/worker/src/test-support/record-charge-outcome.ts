import type { BackoffPolicy } from '@once/backoff';
import type { ClaimedJob } from '@once/db/outbox';
import type { PaymentEventInput } from '@once/db/payment-events';
import type postgres from 'postgres';
import type { AdoptedIntentHistory } from '../jobs/charge/adopted-intent-history.ts';
import { describeChargeOutcome, endCharge } from '../jobs/charge/record-charge-outcome.ts';
import { type RecordResult, recordOutcome } from '../jobs/processor-action-job.ts';
import type { ChargeOutcome } from '../processor/charge-outcome.ts';

/** Records a charge's outcome as the job template does after its call, for tests that skip the call. */
export function recordChargeOutcome(
  sql: postgres.Sql,
  job: ClaimedJob,
  outcome: ChargeOutcome,
  backoff: BackoffPolicy,
  callEvents: readonly PaymentEventInput[] = [],
  adopted?: AdoptedIntentHistory,
): Promise<RecordResult> {
  const about: Record<string, unknown> = { outcome: describeChargeOutcome(outcome) };
  return recordOutcome(sql, job, backoff, { outcome, callEvents, about }, (tx) =>
    endCharge(tx, job, outcome, about, adopted),
  );
}
