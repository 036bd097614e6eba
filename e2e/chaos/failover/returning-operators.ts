// After the returning shoppers, operators whose refund was acknowledged (answered 200) and is
// gone (its commit lost with asynchronous replication, alone or with its payment) ask again
// with the refund's own Idempotency-Key, on the payment as it is now (the one the shopper made
// again, when the first is gone). The refund's id and downstream key, derived from (tenant,
// the operator's key), must make it the same refund: found where the re-created payment took
// it from the processor, or sent again and replayed by the processor, never given twice.
import {
  type ClientContext,
  type ClientEvent,
  type IntentPlan,
  RETURNING_OPERATOR,
} from '@once/chaos';
import { moneyActionOver, readPaymentState, readRefundStates } from '../clients/pay-transport.ts';

const REQUEST_TIMEOUT_MS = 8_000;

/**
 * Every acknowledged refund missing from its intent's current payment is asked for again,
 * until a definite answer or `deadlineAt` (history time); resolves with how many were.
 */
export async function runReturningOperators(
  intents: readonly IntentPlan[],
  ctx: ClientContext,
): Promise<number> {
  const answered = ctx.history.events.filter((e): e is ClientEvent => 'op' in e && e.type === 'ok');
  const payments = answered.filter((e) => (e.f === 'pay' || e.f === 'late') && e.paymentId);
  const refunds = answered.filter((e) => e.f === 'refund' && e.refundId);
  const retries = intents.map(async (intent) => {
    const acknowledged = new Map<string, ClientEvent>();
    for (const e of refunds.filter((r) => r.intent === intent.id)) acknowledged.set(e.key, e);
    // The payment as it is now: the last one made for the checkout (a returning shopper's).
    const paymentId = payments.findLast((e) => e.intent === intent.id)?.paymentId;
    if (acknowledged.size === 0 || !paymentId) return 0;
    const apiKey = ctx.catalogue(intent.tenantId).apiKey;
    const payment = await readPaymentState(ctx.webUrl(), apiKey, paymentId, REQUEST_TIMEOUT_MS);
    // Refunded only while it holds the money, as the operator's flow does.
    if (payment.state !== 'succeeded') return 0;
    const shown = await readRefundStates(ctx.webUrl(), apiKey, paymentId, REQUEST_TIMEOUT_MS);
    if (!shown.refunds) return 0;
    const present = new Set(shown.refunds.map((r) => r.refundId));
    let retried = 0;
    for (const [key, first] of acknowledged) {
      if (present.has(first.refundId!)) continue;
      retried++;
      for (let answered = false; !answered && ctx.history.elapsed() < ctx.deadlineAt(); ) {
        const complete = ctx.history.invoke({
          intent: intent.id,
          tenantId: intent.tenantId,
          key,
          process: RETURNING_OPERATOR,
          f: 'refund',
        });
        const { type, ...answer } = await moneyActionOver(
          'trpc',
          'refund',
        )({
          webUrl: ctx.webUrl(),
          apiKey,
          key,
          body: { paymentId, ...(first.amount === undefined ? {} : { amount: first.amount }) },
          timeoutMs: REQUEST_TIMEOUT_MS,
        });
        complete(type, { ...answer, paymentId, amount: first.amount });
        answered =
          type === 'ok' || (type === 'fail' && ![409, 429, 503].includes(answer.status ?? 0));
        if (!answered) await ctx.sleep((answer.retryAfterSeconds ?? 1) * 1000);
      }
    }
    return retried;
  });
  return (await Promise.all(retries)).reduce((n, r) => n + r, 0);
}
