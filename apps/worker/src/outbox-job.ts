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
  /** The worker that claimed it (`locked_by`): its lane in the payment's timeline. */
  lockedBy: string;
  lockToken: string;
  lockedUntil: Date;
}

export interface ClaimedJobRow {
  tenant_id: string;
  id: string;
  payment_id: string;
  downstream_key: string;
  payload: Record<string, unknown> | string | null;
  attempts: number;
  max_attempts: number;
  locked_by: string;
  lock_token: string;
  locked_until: Date;
}

export function toClaimedJob(row: ClaimedJobRow): ClaimedJob {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    paymentId: row.payment_id,
    downstreamKey: row.downstream_key,
    payload: parsePayload(row.payload),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lockedBy: row.locked_by,
    lockToken: row.lock_token,
    lockedUntil: row.locked_until,
  };
}

// A writer that bound the payload as a JSON *string* (a postgres.js jsonb pitfall) stores
// a jsonb string; read it as the object it was meant to be rather than lose its fields.
function parsePayload(payload: ClaimedJobRow['payload']): Record<string, unknown> {
  if (typeof payload === 'string') {
    try {
      const parsed: unknown = JSON.parse(payload);
      return typeof parsed === 'object' && parsed !== null
        ? (parsed as Record<string, unknown>)
        : {};
    } catch {
      return {};
    }
  }
  return payload ?? {};
}
