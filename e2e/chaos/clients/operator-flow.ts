import type { ClientContext, ClientEvent, IntentPlan } from '@once/chaos';

type OperatorRequestPlan = IntentPlan['refunds'][number];
type MoneyActionOp = Extract<ClientEvent['f'], 'capture' | 'void' | 'refund'>;

import {
  moneyActionOver,
  type PayAnswer,
  readRefundStates,
  recordPaymentState,
  retryDelayMs,
  signInOperator,
  signOutOperator,
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
 */
export async function runOperatorFlow(
  plan: IntentPlan,
  payment: { paymentId: string; shown: string | undefined },
  ctx: ClientContext,
): Promise<void> {
  const tenant = ctx.catalogue(plan.tenantId);
  const status = () => ctx.history.invoke({ ...operatorOf(plan), key: plan.key, f: 'status' });
  let shown = payment.shown;
  const readState = async () => {
    const view = await recordPaymentState(
      ctx,
      { ...operatorOf(plan), key: plan.key },
      { apiKey: tenant.apiKey, paymentId: payment.paymentId, timeoutMs: plan.clientTimeoutMs },
    );
    shown = view.state ?? shown;
  };

  const rude = plan.rude;
  let revoked = rude?.revokedSession ?? false;
  /**
   * The rude operator's first move, once: opens an operator session with the API key, signs
   * it out on the server, then sends the action with that session's cookie under a key of its
   * own. It must be refused 401 and do nothing (the checker looks for any action under its
   * key). A session the server would not open (its rate limit) is no test: nothing is sent.
   */
  const fromRevokedSession = async (f: MoneyActionOp, request: OperatorRequestPlan) => {
    if (!revoked) return;
    revoked = false;
    const cookie = await signInOperator(ctx.webUrl(), tenant.apiKey, plan.clientTimeoutMs);
    if (!cookie || !(await signOutOperator(ctx.webUrl(), cookie, plan.clientTimeoutMs))) return;
    const again = { ...request, key: `${request.key}-revoked` };
    await sendOnce(plan, payment.paymentId, f, again, ctx, {
      sessionCookie: cookie,
      revokedSession: true,
    });
  };

  if (plan.operatorAction && shown === 'requires_capture') {
    await ctx.sleep(plan.operatorAction.afterMs);
    const f = plan.flow === 'void' ? 'void' : 'capture';
    await fromRevokedSession(f, plan.operatorAction);
    const [answer] = await Promise.all([
      sendUntilDefinite(plan, payment.paymentId, f, plan.operatorAction, ctx, {
        race: rude?.rival !== undefined,
      }),
      rude?.rival
        ? sendUntilDefinite(plan, payment.paymentId, rude.rival.f, rude.rival, ctx, { race: true })
        : undefined,
    ]);
    if (answer?.type === 'ok' && f === 'capture' && rude?.captureKeyForRefund) {
      // The capture's key, for a refund: one operation per key, so 422 and nothing refunded.
      await sendUntilDefinite(
        plan,
        payment.paymentId,
        'refund',
        { ...plan.operatorAction, amount: 1, submits: 1, loseFirstResponse: false },
        ctx,
      );
    }
    if (answer?.type === 'ok') {
      await watch(ctx, async () => {
        await readState();
        return !AUTHORISED.has(shown ?? '');
      });
    }
  }
  let refunded = 0;
  const refund = async (request: OperatorRequestPlan, index: number) => {
    const answer = await sendUntilDefinite(plan, payment.paymentId, 'refund', request, ctx, {
      acrossTransports: index === 0 && (rude?.refundAcrossTransports ?? false),
    });
    if (answer?.type === 'ok') refunded++;
  };
  if (shown === RECEIVED && plan.refunds.length > 0 && ctx.history.elapsed() <= ctx.deadlineAt()) {
    await fromRevokedSession('refund', plan.refunds[0]!);
    if (rude?.refundsAtOnce) {
      // Several keys at once, each asking for all that is left: the refund cap is decided under
      // the payment's lock, one by one, so one of them refunds and the others are refused.
      await Promise.all(
        plan.refunds.map(({ amount: _part, ...whole }, index) => refund(whole, index)),
      );
    } else {
      for (const [index, request] of plan.refunds.entries()) {
        if (shown !== RECEIVED || ctx.history.elapsed() > ctx.deadlineAt()) break;
        await refund(request, index);
      }
    }
  }
  // The operator reads the refunds until each is final; each one shown goes into the history.
  if (refunded > 0) {
    await watch(ctx, async () => {
      const complete = status();
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
        status()('ok', {
          paymentId: payment.paymentId,
          refundId: r.refundId,
          refundState: r.status,
        });
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
  f: MoneyActionOp,
  request: OperatorRequestPlan,
  ctx: ClientContext,
  options: { race?: boolean; acrossTransports?: boolean } = {},
): Promise<PayAnswer | undefined> {
  const send = (loseResponse: boolean, over: Transport = 'trpc', race = false) =>
    sendOnce(plan, paymentId, f, request, ctx, {
      loseResponse,
      over,
      ...(over === 'trpc' ? {} : { transport: over }),
      ...(race ? { race } : {}),
    });
  // A double-click sends the same request twice; across transports, once more over REST and
  // once over GraphQL, all at once.
  const burst: Transport[] = [
    ...Array.from({ length: request.submits }, () => 'trpc' as const),
    ...(options.acrossTransports ? (['rest', 'graphql'] as const) : []),
  ];
  const first = await Promise.all(
    burst.map((over, i) =>
      send(i === 0 && request.loseFirstResponse, over, i === 0 && (options.race ?? false)),
    ),
  );
  let last = first.find((a) => isDefinite(a)) ?? first.at(-1)!;
  for (let attempt = 1; !isDefinite(last); attempt++) {
    if (ctx.history.elapsed() > ctx.deadlineAt()) return undefined;
    await ctx.sleep(retryDelayMs(last, attempt));
    last = await send(false);
  }
  return last;
}

type Transport = 'trpc' | 'rest' | 'graphql';

/** Who the operator's requests on an intent's payment are recorded as. */
const operatorOf = (plan: IntentPlan) => ({
  intent: plan.id,
  tenantId: plan.tenantId,
  process: 'client-operator',
});

/**
 * One operator request, recorded as invoke and its answer (with `mark`'s fields): over
 * `over` (default tRPC), with the merchant's API key or an operator session's cookie.
 */
async function sendOnce(
  plan: IntentPlan,
  paymentId: string,
  f: MoneyActionOp,
  request: OperatorRequestPlan,
  ctx: ClientContext,
  options: {
    loseResponse?: boolean;
    over?: Transport;
    sessionCookie?: string;
  } & Partial<ClientEvent>,
): Promise<PayAnswer> {
  const { loseResponse, over = 'trpc', sessionCookie, ...mark } = options;
  const complete = ctx.history.invoke({ ...operatorOf(plan), key: request.key, f });
  const { type, ...answer } = await moneyActionOver(
    over,
    f,
  )({
    webUrl: ctx.webUrl(),
    apiKey: ctx.catalogue(plan.tenantId).apiKey,
    ...(sessionCookie ? { sessionCookie } : {}),
    key: request.key,
    body: { paymentId, ...(request.amount === undefined ? {} : { amount: request.amount }) },
    timeoutMs: plan.clientTimeoutMs,
    ...(loseResponse ? { loseResponse } : {}),
  });
  complete(type, { ...answer, paymentId, amount: request.amount, ...mark });
  return { type, ...answer };
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
