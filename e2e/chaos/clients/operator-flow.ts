import type { ClientEvent } from '../history.ts';
import type { IntentPlan, OperatorRequestPlan } from '../schedule.ts';
import type { ClientContext } from './client-context.ts';
import {
  operatorAction,
  type PayAnswer,
  readPaymentState,
  readRefundStates,
} from './pay-transport.ts';

/**
 * The payment as its merchant reads it (`GET /api/v1/payments/{id}`, Stripe's words): money
 * received (charged, or captured) is `succeeded`; an authorisation `requires_capture`, then
 * `processing` while its capture or void is under way.
 */
const RECEIVED = 'succeeded';
const AUTHORISED = new Set(['requires_capture', 'processing']);
/** How long the operator watches a capture or void, or its refunds, for the answer. */
const WATCH_MS = 30_000;

/**
 * The merchant's operator acting on one customer's payment once it settled: the planned
 * capture or void of an authorisation (after the authorisation window for the `expire`
 * flow), watched until the payment is no longer authorised; then each planned refund in
 * turn, while the payment holds money, and the refunds read until each is final. Every
 * request is recorded like a checkout's (invoke, then ok / fail / info), with the payment
 * and refund states the operator reads in between.
 *
 * @example
 * await runOperatorFlow(plan, { paymentId, shown: 'requires_capture' }, ctx);
 */
export async function runOperatorFlow(
  plan: IntentPlan,
  payment: { paymentId: string; shown: string | undefined },
  ctx: ClientContext,
): Promise<void> {
  const tenant = ctx.catalogue(plan.tenantId);
  const process = 'client-operator';
  let shown = payment.shown;
  const readState = async () => {
    const complete = ctx.history.invoke({
      intent: plan.id,
      tenantId: plan.tenantId,
      key: plan.key,
      process,
      f: 'status',
    });
    const view = await readPaymentState(
      ctx.webUrl(),
      tenant.apiKey,
      payment.paymentId,
      plan.clientTimeoutMs,
    );
    if (view.state) {
      complete('ok', { status: view.status, paymentId: payment.paymentId, state: view.state });
      shown = view.state;
    } else
      complete('info', { status: view.status, paymentId: payment.paymentId, error: view.error });
  };

  if (plan.operatorAction && shown === 'requires_capture') {
    await ctx.sleep(plan.operatorAction.afterMs);
    const f = plan.flow === 'void' ? 'void' : 'capture';
    const answer = await sendUntilDefinite(plan, payment.paymentId, f, plan.operatorAction, ctx);
    if (answer?.type === 'ok') {
      await watch(ctx, async () => {
        await readState();
        return !AUTHORISED.has(shown ?? '');
      });
    }
  }
  let refunded = 0;
  for (const refund of plan.refunds) {
    if (shown !== RECEIVED || ctx.history.elapsed() > ctx.deadlineAt()) break;
    const answer = await sendUntilDefinite(plan, payment.paymentId, 'refund', refund, ctx);
    if (answer?.type === 'ok') refunded++;
  }
  // The operator reads the refunds until each is final; each one shown goes into the history.
  if (refunded > 0) {
    await watch(ctx, async () => {
      const complete = ctx.history.invoke({
        intent: plan.id,
        tenantId: plan.tenantId,
        key: plan.key,
        process,
        f: 'status',
      });
      const read = await readRefundStates(
        ctx.webUrl(),
        tenant.apiKey,
        payment.paymentId,
        plan.clientTimeoutMs,
      );
      if (!read.refunds) {
        complete('info', { status: read.status, paymentId: payment.paymentId, error: read.error });
        return false;
      }
      complete('ok', { status: read.status, paymentId: payment.paymentId });
      for (const r of read.refunds) {
        ctx.history.invoke({
          intent: plan.id,
          tenantId: plan.tenantId,
          key: plan.key,
          process,
          f: 'status',
        })('ok', { paymentId: payment.paymentId, refundId: r.refundId, refundState: r.status });
      }
      return read.refunds.every((r) => r.status !== 'pending');
    });
  }
}

/** Polls `done` with a growing pause until it holds, for {@link WATCH_MS} at most. */
async function watch(ctx: ClientContext, done: () => Promise<boolean>): Promise<void> {
  const until = Math.min(ctx.history.elapsed() + WATCH_MS, ctx.deadlineAt());
  for (let pollMs = 500; ctx.history.elapsed() < until; pollMs = Math.min(3_000, pollMs * 2)) {
    if (await done()) return;
    await ctx.sleep(pollMs);
  }
}

/**
 * One operator request: sent `submits` times at once (a double-click), its first answer
 * possibly dropped, then retried with the same key until a definite answer (accepted, or
 * refused for what it asked) or the clients' deadline. Retried: unknown outcomes, the key in
 * use by the request still running, 429 and 503.
 */
async function sendUntilDefinite(
  plan: IntentPlan,
  paymentId: string,
  f: Extract<ClientEvent['f'], 'capture' | 'void' | 'refund'>,
  request: OperatorRequestPlan,
  ctx: ClientContext,
): Promise<PayAnswer | undefined> {
  const tenant = ctx.catalogue(plan.tenantId);
  const transport = operatorAction(
    f === 'capture' ? 'ops.capturePayment' : f === 'void' ? 'ops.voidPayment' : 'ops.refundPayment',
  );
  const body = { paymentId, ...(request.amount === undefined ? {} : { amount: request.amount }) };
  const send = async (loseResponse: boolean) => {
    const complete = ctx.history.invoke({
      intent: plan.id,
      tenantId: plan.tenantId,
      key: request.key,
      process: 'client-operator',
      f,
    });
    const { type, ...answer } = await transport({
      webUrl: ctx.webUrl(),
      apiKey: tenant.apiKey,
      key: request.key,
      body,
      timeoutMs: plan.clientTimeoutMs,
      loseResponse,
    });
    complete(type, { ...answer, paymentId, amount: request.amount });
    return { type, ...answer };
  };
  const first = await Promise.all(
    Array.from({ length: request.submits }, (_, i) => send(i === 0 && request.loseFirstResponse)),
  );
  let last = first.find((a) => isDefinite(a)) ?? first.at(-1)!;
  for (let attempt = 1; !isDefinite(last); attempt++) {
    if (ctx.history.elapsed() > ctx.deadlineAt()) return undefined;
    await ctx.sleep(
      last.retryAfterSeconds !== undefined
        ? last.retryAfterSeconds * 1000
        : Math.min(4_000, 300 * 2 ** Math.min(attempt, 4)),
    );
    last = await send(false);
  }
  return last;
}

/** Accepted, or refused for what it asked (not a key in use, a rate limit or an outage). */
function isDefinite(answer: PayAnswer): boolean {
  if (answer.type === 'ok') return true;
  if (answer.type === 'info') return false;
  return !(
    answer.status === 429 ||
    answer.status === 503 ||
    (answer.status === 409 && answer.error?.startsWith('idempotency_'))
  );
}
