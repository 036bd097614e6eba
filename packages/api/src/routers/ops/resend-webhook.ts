import { TRPCError } from '@trpc/server';
import type { Database } from '../../database.ts';
import { ApiError } from '../../errors/api-error.ts';
import { ProcessorUnreachableError } from '../../processor/processor-ledger.ts';
import type { ProcessorWebhookDeliveries } from '../../webhooks/processor-webhook-deliveries.ts';
import { processorAccountOf } from './webhook-deliveries.ts';
import type { ResendWebhookInput } from './webhook-deliveries.types.ts';

/**
 * Sends one webhook event of the caller's tenant again: the same event id, so the webhook
 * route, which applies each event id once, moves nothing twice. Only the tenant's own account
 * is searched: another tenant's event is `webhook_event_not_found`, like an unknown one. A
 * processor that cannot be asked is 503 (the guard releases the key; pressing again resends,
 * which is harmless for the same reason).
 */
export async function resendWebhook({
  ctx,
  input,
}: {
  ctx: { db: Database; tenantId: string; processorWebhooks: ProcessorWebhookDeliveries };
  input: ResendWebhookInput;
}) {
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
