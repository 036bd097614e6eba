import { payments, tenants } from '@once/db/schema';
import { and, eq } from 'drizzle-orm';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import { ProcessorUnreachableError } from '../../processor/processor-ledger.ts';
import type { ProcessorWebhookDeliveries } from '../../webhooks/processor-webhook-deliveries.ts';
import type { OpsWebhookDeliveries, WebhookDeliveriesInput } from './webhook-deliveries.types.ts';

/** The processor's merchant account of a tenant (the events are filed under it), or null. */
export async function processorAccountOf(db: Database, tenantId: string): Promise<string | null> {
  const [tenant] = await db
    .select({ processorAccountId: tenants.processorAccountId })
    .from(tenants)
    .where(eq(tenants.id, tenantId))
    .limit(1);
  return tenant?.processorAccountId ?? null;
}

/**
 * The webhook events of the caller's tenant (of one of its payments with `paymentId`: the
 * events of its PaymentIntent), as the processor's outbox records their delivery. The
 * processor is asked only for the tenant's own account, so no other tenant's event is ever
 * listed. A processor that cannot be asked is an answer (`unreachable`), not an error: the
 * cockpit is needed most when the processor is in trouble. Another tenant's payment id is
 * `payment_not_found`.
 */
export async function webhookDeliveries({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string; processorWebhooks: ProcessorWebhookDeliveries };
  input: WebhookDeliveriesInput;
}): Promise<OpsWebhookDeliveries> {
  let paymentIntentId: string | undefined;
  if (input.paymentId !== undefined) {
    const [payment] = await ctx.db
      .select({ intentId: payments.processorPaymentIntentId })
      .from(payments)
      .where(and(eq(payments.tenantId, ctx.tenantId), eq(payments.id, input.paymentId)))
      .limit(1);
    if (!payment)
      throw new ApiError('payment_not_found', undefined, { paymentId: input.paymentId });
    if (!payment.intentId) return { processor: 'no_intent', processorError: null, deliveries: [] };
    paymentIntentId = payment.intentId;
  }
  const account = await processorAccountOf(ctx.db, ctx.tenantId);
  if (!account) {
    return {
      processor: 'no_account',
      processorError: 'the tenant has no processor account',
      deliveries: [],
    };
  }
  try {
    const deliveries = await ctx.processorWebhooks.list(account, {
      limit: input.limit,
      ...(paymentIntentId ? { paymentIntentId } : {}),
    });
    return { processor: 'reachable', processorError: null, deliveries };
  } catch (error) {
    if (!(error instanceof ProcessorUnreachableError)) throw error;
    return { processor: 'unreachable', processorError: error.message, deliveries: [] };
  }
}
