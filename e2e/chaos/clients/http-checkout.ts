import { type ClientContext, type IntentPlan, paymentMethodOf } from '@once/chaos';
import { runOperatorFlow } from './operator-flow.ts';
import {
  type PayAnswer,
  recordPaymentState,
  restPay,
  retryDelayMs,
  trpcPay,
} from './pay-transport.ts';
import { meetChallengeOverHttp } from './three-d-secure-http.ts';

/**
 * One customer paying over REST or tRPC: double / triple submit, a lost first answer,
 * retries with the SAME key honouring `Retry-After` (capped backoff otherwise), giving up
 * after a few unknown answers, a key reused for another cart, a late duplicate after
 * success, then watching the payment until it is terminal (or authorised), answering (or
 * leaving) the bank's 3-D Secure challenge on the way if it meets one; then the
 * operator's capture, void or refunds of it, if the plan has any. Every request goes into
 * the history as invoke + ok / fail / info.
 */
export async function runHttpIntent(
  plan: IntentPlan,
  ctx: ClientContext,
): Promise<{ paymentId?: string; shown?: string }> {
  const tenant = ctx.catalogue(plan.tenantId);
  const transport = plan.transport === 'rest' ? restPay : trpcPay;
  const process = `client-${plan.transport}`;
  const body = {
    lines: plan.lines,
    paymentMethod: paymentMethodOf(plan),
    // An authorisation: REST names it as Stripe does, tRPC as the checkout page sends it.
    ...(plan.flow === 'charge'
      ? {}
      : plan.transport === 'rest'
        ? { captureMethod: 'manual' as const }
        : { capture: 'manual' as const }),
  };
  const base = { intent: plan.id, tenantId: plan.tenantId, key: plan.key, process };

  const pay = async (f: 'pay' | 'reuse' | 'late', loseResponse: boolean, payload = body) => {
    const complete = ctx.history.invoke({ ...base, f });
    const answer = await transport({
      webUrl: ctx.webUrl(),
      apiKey: tenant.apiKey,
      key: plan.key,
      body: payload,
      timeoutMs: plan.clientTimeoutMs,
      loseResponse,
    });
    const { type, ...rest } = answer;
    complete(type, rest);
    return answer;
  };

  // First attempt: one to three submits at once, the first one's answer possibly lost.
  const first = await Promise.all(
    Array.from({ length: plan.submits }, (_, i) => pay('pay', i === 0 && plan.loseFirstResponse)),
  );
  let accepted = first.find((a) => a.type === 'ok');
  let refused = first.every((a) => a.type === 'fail' && !isRetryable(a));
  let last = first[first.length - 1]!;

  if (plan.reuseKeyWithOtherCart) {
    const other = { ...body, lines: plan.lines.map((l) => ({ ...l, quantity: l.quantity + 1 })) };
    await pay('reuse', false, other);
  }

  let attempts = 1;
  while (!accepted && !refused && attempts < plan.giveUpAfterAttempts) {
    if (ctx.history.elapsed() > ctx.deadlineAt()) break;
    await ctx.sleep(retryDelayMs(last, attempts));
    last = await pay('pay', false);
    attempts++;
    if (last.type === 'ok') accepted = last;
    else if (last.type === 'fail' && !isRetryable(last)) refused = true;
  }
  if (!accepted) return {};

  const paymentId = accepted.paymentId!;
  let lateAt =
    plan.lateDuplicateAfterMs === null ? null : ctx.history.elapsed() + plan.lateDuplicateAfterMs;
  let shown: string | undefined;
  let pollMs = 800;
  let challenged = false;
  while (ctx.history.elapsed() < ctx.deadlineAt()) {
    if (lateAt !== null && ctx.history.elapsed() >= lateAt) {
      await pay('late', false);
      lateAt = null;
    }
    const view = await recordPaymentState(
      ctx,
      base,
      { apiKey: tenant.apiKey, paymentId, timeoutMs: plan.clientTimeoutMs },
      (status) => status >= 400 && status < 500,
    );
    if (view.state) {
      shown = view.state;
      // The bank's challenge, once: then the payment is watched until it ends.
      if (view.state === 'requires_action' && plan.challenge && !challenged) {
        challenged = true;
        await meetChallengeOverHttp(
          { ...plan, challenge: plan.challenge },
          { paymentId, url: view.nextActionUrl },
          ctx,
        );
        pollMs = 800;
        continue;
      }
      // Authorised is as far as the customer's checkout goes: the operator takes it from there.
      if ((view.terminal || view.state === 'requires_capture') && lateAt === null) break;
    }
    await ctx.sleep(pollMs);
    pollMs = Math.min(4_000, Math.round(pollMs * 1.5));
  }
  if (plan.operatorAction || plan.refunds.length > 0) {
    await runOperatorFlow(plan, { paymentId, shown }, ctx);
  }
  return { paymentId, shown };
}

/** 409 (in use, outcome unknown), 429 and 503 ask the client to come back later. */
function isRetryable(answer: PayAnswer): boolean {
  return answer.status === 409 || answer.status === 429 || answer.status === 503;
}
