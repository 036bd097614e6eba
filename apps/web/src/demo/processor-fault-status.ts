import type { Database } from '@once/api';
import type { ChaosSwitchboard, ProcessorFaultState } from './chaos-switchboard.ts';

/** A processor fault switch as the cockpit shows it: armed, and which payment it last hit. */
export interface ProcessorFaultStatus extends Omit<ProcessorFaultState, 'lastUse'> {
  lastUse:
    | (NonNullable<ProcessorFaultState['lastUse']> & {
        /** This tenant's payment it hit; null: none of ours is known by that object (yet). */
        paymentId: string | null;
      })
    | null;
}

/**
 * Each processor fault switch's state for the tenant, each last use named by the payment it hit,
 * looked up by the processor object it saw (intent, refund, event), not derived from its
 * Idempotency-Key, whose shape is the worker's to change.
 */
export async function processorFaultStatus(
  db: Database,
  chaos: ChaosSwitchboard,
  tenantId: string,
): Promise<ProcessorFaultStatus[]> {
  const account = await processorAccountOf(db, tenantId);
  if (!account) return [];
  const states = await chaos.processorFaults(account);
  const objects = states.flatMap((s) => s.lastUse?.processorObject ?? []);
  const paymentOf = await paymentsByProcessorObject(db, tenantId, objects);
  return states.map((state) => ({
    ...state,
    lastUse: state.lastUse && {
      ...state.lastUse,
      paymentId: paymentOf.get(state.lastUse.processorObject ?? '') ?? null,
    },
  }));
}

/** The tenant's account at the processor; null: it has none. */
export async function processorAccountOf(db: Database, tenantId: string): Promise<string | null> {
  const tenant = await db.query.tenants.findFirst({
    columns: { processorAccountId: true },
    where: (tenant, { eq }) => eq(tenant.id, tenantId),
  });
  return tenant?.processorAccountId ?? null;
}

/** The tenant's payment of each payment intent (`pi_`), refund (`re_`) or applied webhook event (`evt_`). */
async function paymentsByProcessorObject(
  db: Database,
  tenantId: string,
  objects: string[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const intents = objects.filter((id) => id.startsWith('pi_'));
  const refundIds = objects.filter((id) => id.startsWith('re_'));
  const events = objects.filter((id) => id.startsWith('evt_'));
  if (intents.length > 0) {
    const rows = await db.query.payments.findMany({
      columns: { id: true, processorPaymentIntentId: true },
      where: (payment, { and, eq, inArray }) =>
        and(eq(payment.tenantId, tenantId), inArray(payment.processorPaymentIntentId, intents)),
    });
    for (const row of rows) {
      if (row.processorPaymentIntentId) found.set(row.processorPaymentIntentId, row.id);
    }
  }
  if (refundIds.length > 0) {
    const rows = await db.query.refunds.findMany({
      columns: { paymentId: true, processorRefundId: true },
      where: (refund, { and, eq, inArray }) =>
        and(eq(refund.tenantId, tenantId), inArray(refund.processorRefundId, refundIds)),
    });
    for (const row of rows) {
      if (row.processorRefundId) found.set(row.processorRefundId, row.paymentId);
    }
  }
  if (events.length > 0) {
    const rows = await db.query.paymentEvents.findMany({
      columns: { paymentId: true, detail: true },
      where: (event, { and, eq, inArray, sql }) =>
        and(eq(event.tenantId, tenantId), inArray(sql`${event.detail}->>'eventId'`, events)),
    });
    for (const row of rows) found.set(String(row.detail.eventId), row.paymentId);
  }
  return found;
}
