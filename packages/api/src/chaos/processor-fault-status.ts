import { paymentEvents, payments, refunds, tenants } from '@once/db/schema';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../database.ts';
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
 * Each processor fault switch's state for the tenant's processor account, each last use named
 * by the payment it hit: a charge or capture fault's payment intent is looked up by the intent
 * id the payment recorded, a refund fault's refund by the refund id the refund recorded, a
 * webhook fault's event by the webhook the payment recorded applying.
 * Looked up by what the processor saw, not derived from its Idempotency-Key, whose shape is
 * the worker's to change.
 *
 * @example
 * const faults = await processorFaultStatus(db, chaos, 'tenant_a');
 * faults[0]; // { switch: 'processor_fail_before_charge', armed: false, lastUse: { at, operation, processorObject: 'pi_…', paymentId: 'pay_…' } }
 */
export async function processorFaultStatus(
  db: Database,
  chaos: ChaosSwitchboard,
  tenantId: string,
): Promise<ProcessorFaultStatus[]> {
  const [tenant] = await db
    .select({ account: tenants.processorAccountId })
    .from(tenants)
    .where(eq(tenants.id, tenantId))
    .limit(1);
  if (!tenant?.account) return [];
  const states = await chaos.processorFaults(tenant.account);
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
    const rows = await db
      .select({ id: payments.id, intent: payments.processorPaymentIntentId })
      .from(payments)
      .where(
        and(eq(payments.tenantId, tenantId), inArray(payments.processorPaymentIntentId, intents)),
      );
    for (const row of rows) if (row.intent) found.set(row.intent, row.id);
  }
  if (refundIds.length > 0) {
    const rows = await db
      .select({ id: refunds.paymentId, refund: refunds.processorRefundId })
      .from(refunds)
      .where(and(eq(refunds.tenantId, tenantId), inArray(refunds.processorRefundId, refundIds)));
    for (const row of rows) if (row.refund) found.set(row.refund, row.id);
  }
  if (events.length > 0) {
    const eventId = sql<string>`${paymentEvents.detail}->>'eventId'`;
    const rows = await db
      .selectDistinct({ id: paymentEvents.paymentId, event: eventId })
      .from(paymentEvents)
      .where(and(eq(paymentEvents.tenantId, tenantId), inArray(eventId, events)));
    for (const row of rows) found.set(row.event, row.id);
  }
  return found;
}
