import postgres from 'postgres';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from './start-processor.ts';
import { adminClient } from './testing/admin-client.ts';
import { createProcessorTestDatabase } from './testing/processor-database.ts';
import { stripeClient } from './testing/stripe-client.ts';
import { startTestProcessor } from './testing/test-processor.ts';

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let stripe: Stripe;

beforeAll(async () => {
  database = await createProcessorTestDatabase('three_d_secure');
  processor = await startTestProcessor({ databaseUrl: database.url });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
});

afterAll(async () => {
  await processor?.stop();
  await database?.drop();
});

const RETURN_URL = 'https://shop.example/checkout/return?order=42';

const ledgerOf = async (paymentIntent: string) =>
  (await adminClient(processor.url).ledger({ payment_intent: paymentIntent })).data;

/** What the shopper's browser does on the hosted page: press one of its two buttons. */
async function answer(challengeUrl: string, choice: 'complete' | 'fail') {
  const page = await fetch(challengeUrl);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain(`value="${choice}"`);
  const url = new URL(challengeUrl);
  return fetch(new URL(url.pathname, url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_secret: url.searchParams.get('client_secret')!,
      answer: choice,
    }),
    redirect: 'manual',
  });
}

const confirmed = (paymentMethod: string, key?: string) =>
  stripe.paymentIntents.create(
    {
      amount: 2500,
      currency: 'eur',
      payment_method: paymentMethod,
      confirm: true,
      return_url: RETURN_URL,
    },
    key ? { idempotencyKey: key } : {},
  );

describe('3-D Secure through the official SDK and the hosted challenge', () => {
  it.each(['pm_card_threeDSecure2Required', 'pm_card_authenticationRequired'])(
    '%s: confirm asks for the challenge; completing it charges once and returns the shopper',
    async (paymentMethod) => {
      const key = `3ds-${paymentMethod}-${Date.now()}`;
      const intent = await confirmed(paymentMethod, key);
      expect(intent).toMatchObject({
        status: 'requires_action',
        next_action: {
          type: 'redirect_to_url',
          redirect_to_url: { return_url: RETURN_URL, url: expect.any(String) },
        },
      });
      expect(await ledgerOf(intent.id)).toEqual([]);

      const challengeUrl = intent.next_action!.redirect_to_url!.url!;
      const back = await answer(challengeUrl, 'complete');
      expect(back.status).toBe(303);
      const location = new URL(back.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe('https://shop.example/checkout/return');
      expect(Object.fromEntries(location.searchParams)).toEqual({
        order: '42',
        payment_intent: intent.id,
        payment_intent_client_secret: intent.client_secret,
        redirect_status: 'succeeded',
      });
      expect(await stripe.paymentIntents.retrieve(intent.id)).toMatchObject({
        status: 'succeeded',
        amount_received: 2500,
        next_action: null,
      });
      // Booked under the key of the confirm that asked for the challenge.
      expect(await ledgerOf(intent.id)).toMatchObject([
        { kind: 'charge', amount: 2500, idempotency_key: key },
      ]);

      // A second press (reload, back button) changes nothing and returns the shopper again.
      const again = await fetch(new URL(new URL(challengeUrl).pathname, challengeUrl), {
        method: 'POST',
        body: new URLSearchParams({
          client_secret: new URL(challengeUrl).searchParams.get('client_secret')!,
          answer: 'fail',
        }),
        redirect: 'manual',
      });
      expect(again.status).toBe(303);
      expect(new URL(again.headers.get('location')!).searchParams.get('redirect_status')).toBe(
        'succeeded',
      );
      expect(await ledgerOf(intent.id)).toHaveLength(1);
    },
  );

  it('failing the challenge leaves requires_payment_method with payment_intent_authentication_failure', async () => {
    const intent = await confirmed('pm_card_threeDSecure2Required');
    const back = await answer(intent.next_action!.redirect_to_url!.url!, 'fail');
    expect(new URL(back.headers.get('location')!).searchParams.get('redirect_status')).toBe(
      'failed',
    );
    expect(await stripe.paymentIntents.retrieve(intent.id)).toMatchObject({
      status: 'requires_payment_method',
      payment_method: null,
      next_action: null,
      last_payment_error: { code: 'payment_intent_authentication_failure' },
    });
    expect(await ledgerOf(intent.id)).toEqual([]);
    // The shopper may pay again with another card.
    const retried = await stripe.paymentIntents.confirm(intent.id, {
      payment_method: 'pm_card_visa',
    });
    expect(retried.status).toBe('succeeded');
  });

  it('an abandoned challenge can be canceled, and its page then charges nothing', async () => {
    const intent = await confirmed('pm_card_threeDSecure2Required');
    const canceled = await stripe.paymentIntents.cancel(intent.id, {
      cancellation_reason: 'abandoned',
    });
    expect(canceled).toMatchObject({ status: 'canceled', next_action: null });
    const challengeUrl = new URL(intent.next_action!.redirect_to_url!.url!);
    expect(await (await fetch(challengeUrl)).text()).not.toContain('value="complete"');
    const late = await fetch(new URL(challengeUrl.pathname, challengeUrl), {
      method: 'POST',
      body: new URLSearchParams({
        client_secret: challengeUrl.searchParams.get('client_secret')!,
        answer: 'complete',
      }),
      redirect: 'manual',
    });
    expect(new URL(late.headers.get('location')!).searchParams.get('redirect_status')).toBe(
      'failed',
    );
    expect((await stripe.paymentIntents.retrieve(intent.id)).status).toBe('canceled');
    expect(await ledgerOf(intent.id)).toEqual([]);
  });

  it('with manual capture, completing the challenge authorises (requires_capture)', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 1200,
      currency: 'usd',
      payment_method: 'pm_card_authenticationRequired',
      capture_method: 'manual',
      confirm: true,
      return_url: RETURN_URL,
    });
    await answer(intent.next_action!.redirect_to_url!.url!, 'complete');
    expect(await stripe.paymentIntents.retrieve(intent.id)).toMatchObject({
      status: 'requires_capture',
      amount_capturable: 1200,
    });
  });

  it('a confirm that asked for a challenge replays under its key; other params under it are refused', async () => {
    const created = await stripe.paymentIntents.create({ amount: 900, currency: 'usd' });
    const key = `confirm-${created.id}`;
    const params = { payment_method: 'pm_card_threeDSecure2Required', return_url: RETURN_URL };
    const first = await stripe.paymentIntents.confirm(created.id, params, { idempotencyKey: key });
    const replay = await stripe.paymentIntents.confirm(created.id, params, {
      idempotencyKey: key,
    });
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(replay.next_action).toEqual(first.next_action);
    await expect(
      stripe.paymentIntents.confirm(
        created.id,
        { ...params, return_url: 'https://shop.example/other' },
        { idempotencyKey: key },
      ),
    ).rejects.toMatchObject({ code: 'idempotency_key_reused', statusCode: 400 });
  });

  it('without a return_url the action is use_stripe_sdk; a bad return_url is refused', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 500,
      currency: 'usd',
      payment_method: 'pm_card_threeDSecure2Required',
      confirm: true,
    });
    expect(intent).toMatchObject({
      status: 'requires_action',
      next_action: { type: 'use_stripe_sdk' },
    });
    await expect(
      stripe.paymentIntents.create({
        amount: 500,
        currency: 'usd',
        payment_method: 'pm_card_visa',
        confirm: true,
        return_url: 'javascript:alert(1)',
      }),
    ).rejects.toMatchObject({ param: 'return_url', statusCode: 400 });
  });
});

describe('the hosted challenge checks the client secret before it takes the intent', () => {
  it('a wrong client secret is refused at once, even while the intent is locked, and never waits for its lock', async () => {
    const intent = await confirmed('pm_card_threeDSecure2Required');
    const url = new URL(intent.next_action!.redirect_to_url!.url!);
    const wrong = `${intent.client_secret!.slice(0, -4)}XXXX`;
    const holder = postgres(database.url, { max: 2, onnotice: () => {} });
    try {
      // Another request in the middle of its answer holds the intent's row lock.
      const held = holder.reserve();
      const tx = await held;
      await tx`begin`;
      await tx`select id from payment_intents where id = ${intent.id} for update`;
      const attempts = [
        fetch(`${url.origin}${url.pathname}?client_secret=${encodeURIComponent(wrong)}`),
        fetch(new URL(url.pathname, url), {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ client_secret: wrong, answer: 'fail' }),
          redirect: 'manual',
        }),
      ];
      // Either every refusal arrives, or a backend of the processor queues behind the lock.
      const waitsForLock = async () => {
        for (;;) {
          const [row] = await holder<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`;
          if (row?.n) return 'waited for the lock' as const;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const first = await Promise.race([Promise.all(attempts), waitsForLock()]);
      await tx`rollback`;
      tx.release();
      expect(first).not.toBe('waited for the lock');
      expect((first as Response[]).map((r) => r.status)).toEqual([404, 404]);
      // The intent is untouched: the right secret still reaches the challenge.
      expect((await stripe.paymentIntents.retrieve(intent.id)).status).toBe('requires_action');
    } finally {
      await holder.end({ timeout: 1 });
    }
  });
});
