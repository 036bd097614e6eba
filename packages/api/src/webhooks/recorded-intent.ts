import { tenants } from '@once/db/schema';
import { eq } from 'drizzle-orm';
import type { Database } from '../database.ts';

// What a processor webhook is trusted for: a hint that one of OUR recorded PaymentIntents
// may have settled. Anyone holding the webhook secret can sign any body, so nothing in the
// body is believed: the payment is the one whose recorded intent the event names, and its
// outcome is what the processor answers when asked for that intent (Stripe: an event's
// object is the state "at the time of the change"; fetch the resource for its current
// state before acting).

/** What the receiver needs to know about the payment an event names. */
interface RecordedIntent {
  paymentId: string;
  /** The intent the worker recorded before confirming it (step A); null: none sent yet. */
  intentId: string | null;
  /** The tenant's processor key, to ask the processor about that intent. */
  secretKey: string;
}

/**
 * The payment an event names (by its `payment_id` metadata, a hint) with its recorded
 * intent, or undefined when the tenant has no such payment.
 */
async function findRecordedIntent(
  db: Database,
  tenantId: string,
  paymentId: string,
): Promise<RecordedIntent | undefined> {
  const payment = await db.query.payments.findFirst({
    columns: { id: true, processorPaymentIntentId: true },
    where: (row, { and, eq }) => and(eq(row.tenantId, tenantId), eq(row.id, paymentId)),
  });
  if (!payment) return undefined;
  const tenant = await db.query.tenants.findFirst({
    columns: { processorSecretKey: true },
    where: (row, { eq }) => eq(row.id, tenantId),
  });
  if (!tenant) return undefined;
  return {
    paymentId: payment.id,
    intentId: payment.processorPaymentIntentId,
    secretKey: tenant.processorSecretKey,
  };
}

/** The part of a processor event that names a payment and its intent (all hints). */
export interface IntentNamingEvent {
  type: string;
  account?: string | null;
  data: {
    object: {
      /** The PaymentIntent's id, on `payment_intent.*` events. */
      id?: string;
      /** The intent a Refund or Charge belongs to, on refund events. */
      payment_intent?: string | null;
      metadata?: Record<string, string> | null;
    };
  };
}

/** Whether an event names one of our payments by the intent that payment recorded. */
export type NamedIntent =
  | { kind: 'ours'; tenantId: string; recorded: RecordedIntent & { intentId: string } }
  | { kind: 'unknown_tenant' }
  | {
      kind: 'not_the_recorded_intent';
      tenantId: string;
      /** The intent the event names, and the payment it names by metadata. */
      intentId: string | null;
      paymentId: string | undefined;
      recorded: RecordedIntent | undefined;
    };

/**
 * The tenant (`resolveEventTenant`) and the payment an event names, and whether the intent it
 * names is the one that payment recorded: only then may the processor be asked about it.
 */
export async function findIntentNamedBy(
  db: Database,
  event: IntentNamingEvent,
): Promise<NamedIntent> {
  const object = event.data.object;
  const tenantId = await resolveEventTenant(db, {
    account: event.account ?? null,
    metadata: object.metadata ?? null,
  });
  if (!tenantId) return { kind: 'unknown_tenant' };
  const intentId =
    (event.type.startsWith('payment_intent.') ? object.id : object.payment_intent) ?? null;
  const paymentId = object.metadata?.payment_id;
  const recorded = paymentId ? await findRecordedIntent(db, tenantId, paymentId) : undefined;
  if (!recorded?.intentId || recorded.intentId !== intentId) {
    return { kind: 'not_the_recorded_intent', tenantId, intentId, paymentId, recorded };
  }
  return { kind: 'ours', tenantId, recorded: { ...recorded, intentId: recorded.intentId } };
}

/**
 * The tenant a processor event belongs to: the connected `account` the processor names
 * (authoritative: it signed the event), else the `tenant_id` our worker put in the
 * PaymentIntent's metadata. Both present and disagreeing means the event is not ours to
 * apply: undefined.
 */
async function resolveEventTenant(
  db: Database,
  event: { account?: string | null; metadata?: Record<string, string> | null },
): Promise<string | undefined> {
  const fromMetadata = event.metadata?.tenant_id;
  const [exists] = fromMetadata
    ? await db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, fromMetadata)).limit(1)
    : [];
  if (!event.account) return exists?.id;
  const [byAccount] = await db
    .select({ id: tenants.id })
    .from(tenants)
    .where(eq(tenants.processorAccountId, event.account))
    .limit(1);
  if (!byAccount) return undefined;
  if (fromMetadata !== undefined && fromMetadata !== byAccount.id) return undefined;
  return byAccount.id;
}
