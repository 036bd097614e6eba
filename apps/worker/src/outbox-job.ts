/** A charge job as the worker holds it after claiming: the lease is proven by `lockToken`. */
export interface ClaimedJob {
  tenantId: string;
  id: string;
  paymentId: string;
  downstreamKey: string;
  payload: Record<string, unknown>;
  /** Including this claim. */
  attempts: number;
  maxAttempts: number;
  lockToken: string;
  lockedUntil: Date;
}

export interface ClaimedJobRow {
  tenant_id: string;
  id: string;
  payment_id: string;
  downstream_key: string;
  payload: Record<string, unknown> | null;
  attempts: number;
  max_attempts: number;
  lock_token: string;
  locked_until: Date;
}

export function toClaimedJob(row: ClaimedJobRow): ClaimedJob {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    paymentId: row.payment_id,
    downstreamKey: row.downstream_key,
    payload: row.payload ?? {},
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lockToken: row.lock_token,
    lockedUntil: row.locked_until,
  };
}
