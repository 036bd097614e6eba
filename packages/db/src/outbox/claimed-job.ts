import type { OutboxJobKind } from '../schema/outbox.ts';
import type { JobHolder } from './job-sql.ts';

/** A job as its worker holds it after claiming: the lease is proven by `lockToken`. */
export interface ClaimedJob<K extends OutboxJobKind = OutboxJobKind> extends JobHolder {
  kind: K;
  paymentId: string;
  downstreamKey: string;
  /** As stored; each kind's handler reads its fields (`OutboxJobPayloads`) defensively. */
  payload: Record<string, unknown>;
  /** Including this claim. */
  attempts: number;
  maxAttempts: number;
  /** The worker that claimed it (`locked_by`): its lane in the payment's timeline. */
  lockedBy: string;
  lockedUntil: Date;
}

/** The columns a claim returns, as either driver reads them. */
export interface ClaimedJobRow {
  tenant_id: string;
  id: string;
  kind: OutboxJobKind;
  payment_id: string;
  downstream_key: string;
  payload: Record<string, unknown> | string | null;
  attempts: number;
  max_attempts: number;
  locked_by: string;
  lock_token: string;
  /** A string on a pool drizzle shares (it turns postgres.js's timestamp parsing off), else a Date. */
  locked_until: Date | string;
}

export function toClaimedJob(row: ClaimedJobRow): ClaimedJob {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    kind: row.kind,
    paymentId: row.payment_id,
    downstreamKey: row.downstream_key,
    payload: parsePayload(row.payload),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lockedBy: row.locked_by,
    lockToken: row.lock_token,
    lockedUntil: new Date(row.locked_until),
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
