import { payments, tenants } from '@once/db/schema';
import { TRPCError } from '@trpc/server';
import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import type {
  ProcessorWebhookDeliveries,
  WebhookDelivery,
} from '../../processor/processor-admin.ts';
import { askProcessorAbout, ProcessorUnreachableError } from '../../processor/processor-admin.ts';

/** One payment's events (`paymentId`), or the tenant's newest `limit` events. */
export const webhookDeliveriesInput = z
  .object({
    paymentId: z.string().min(1).max(100).optional(),
    limit: z.number().int().min(1).max(100).default(50),
  })
  .default({ limit: 50 });

export const resendWebhookInput = z.object({
  eventId: z.string().regex(/^evt_[A-Za-z0-9_]{1,100}$/),
});

/**
 * The processor's webhook outbox for the caller's tenant, newest first. `processor` says
 * whether it could be asked: `no_intent` (the payment has no PaymentIntent yet, so no events),
 * `no_account` (the tenant has no processor account), `unreachable` (with `processorError`).
 */
export interface OpsWebhookDeliveries {
  processor: 'reachable' | 'unreachable' | 'no_account' | 'no_intent';
  processorError: string | null;
  deliveries: WebhookDelivery[];
}

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
export async function webhookDeliveries(
  ctx: { db: Database; tenantId: string; processorWebhooks: ProcessorWebhookDeliveries },
  input: z.infer<typeof webhookDeliveriesInput>,
): Promise<OpsWebhookDeliveries> {
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
  const asked = await askProcessorAbout(account, (account) =>
    ctx.processorWebhooks.list(account, {
      limit: input.limit,
      ...(paymentIntentId ? { paymentIntentId } : {}),
    }),
  );
  return {
    processor: asked.processor,
    processorError: asked.processorError,
    deliveries: asked.answer ?? [],
  };
}

/**
 * Sends one webhook event of the caller's tenant again: the same event id, so the webhook
 * route, which applies each event id once, moves nothing twice. Only the tenant's own account
 * is searched: another tenant's event is `webhook_event_not_found`, like an unknown one. A
 * processor that cannot be asked is 503 (the guard releases the key; pressing again resends,
 * which is harmless for the same reason).
 */
export async function resendWebhook(
  ctx: { db: Database; tenantId: string; processorWebhooks: ProcessorWebhookDeliveries },
  input: z.infer<typeof resendWebhookInput>,
) {
  const notFound = new ApiError('webhook_event_not_found', undefined, { eventId: input.eventId });
  const account = await processorAccountOf(ctx.db, ctx.tenantId);
  if (!account) throw notFound;
  let answer: Awaited<ReturnType<ProcessorWebhookDeliveries['resend']>>;
  try {
    answer = await ctx.processorWebhooks.resend(account, input.eventId);
  } catch (error) {
    if (!(error instanceof ProcessorUnreachableError)) throw error;
    throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: error.message, cause: error });
  }
  if (!answer) throw notFound;
  return { eventId: input.eventId, ...answer };
}
