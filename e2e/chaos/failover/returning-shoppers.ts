// After the heal of a failover run, shoppers whose acknowledged payment is gone (its commit
// lost with asynchronous replication) come back: "where is my order?". Each pays again with
// the checkout's own Idempotency-Key and watches the payment until it is final. The payment is
// made again; its downstream key, derived from (tenant, checkout key), must make the processor
// replay the first charge, so the shopper still ends with exactly one.
import type { ClientContext, ClientEvent, IntentPlan } from '@once/chaos';
import { recordPaymentState, restPay } from '../clients/pay-transport.ts';

const REQUEST_TIMEOUT_MS = 8_000;

/**
 * Every intent answered with a payment the app no longer shows (404) pays again and watches;
 * resolves with how many came back. Stops at `deadlineAt` (history time).
 */
export async function runReturningShoppers(
  intents: readonly IntentPlan[],
  ctx: ClientContext,
): Promise<number> {
  const answered = ctx.history.events.filter(
    (e): e is ClientEvent =>
      'op' in e && e.type === 'ok' && (e.f === 'pay' || e.f === 'late') && !!e.paymentId,
  );
  const returns = intents.map(async (intent) => {
    const last = answered.findLast((e) => e.intent === intent.id);
    if (!last) return false;
    const tenant = ctx.catalogue(intent.tenantId);
    const base = {
      intent: intent.id,
      tenantId: intent.tenantId,
      key: last.key,
      process: 'returning-shopper',
    };
    const watch = (paymentId: string) =>
      recordPaymentState(
        ctx,
        base,
        { apiKey: tenant.apiKey, paymentId, timeoutMs: REQUEST_TIMEOUT_MS },
        (status) => status === 404,
      );
    if ((await watch(last.paymentId!)).status !== 404) return false;

    let paymentId: string | undefined;
    while (!paymentId && ctx.history.elapsed() < ctx.deadlineAt()) {
      const complete = ctx.history.invoke({ ...base, f: 'pay' });
      const answer = await restPay({
        webUrl: ctx.webUrl(),
        apiKey: tenant.apiKey,
        key: last.key,
        body: {
          lines: intent.lines,
          paymentMethod: intent.paymentMethod,
          ...(intent.flow === 'charge' ? {} : { captureMethod: 'manual' as const }),
        },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      const { type, ...details } = answer;
      complete(type, details);
      if (type === 'ok') paymentId = answer.paymentId;
      else if (type === 'fail' && ![409, 429, 503].includes(answer.status ?? 0)) return true;
      else await ctx.sleep((answer.retryAfterSeconds ?? 1) * 1000);
    }
    while (paymentId && ctx.history.elapsed() < ctx.deadlineAt()) {
      const view = await watch(paymentId);
      if (view.terminal || view.state === 'requires_capture') break;
      await ctx.sleep(1_000);
    }
    return true;
  });
  return (await Promise.all(returns)).filter(Boolean).length;
}
