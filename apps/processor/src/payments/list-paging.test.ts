import postgres from 'postgres';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcessor } from '../start-processor.ts';
import { createProcessorTestDatabase } from '../testing/processor-database.ts';
import { stripeClient } from '../testing/stripe-client.ts';
import { startTestProcessor } from '../testing/test-processor.ts';

// Two rows written in one millisecond differ only in the microseconds of `created_at`, which a
// JS Date cannot hold: a `starting_after` cursor read into a Date lands before both, and the
// later row sorts above it and is never listed.

let database: Awaited<ReturnType<typeof createProcessorTestDatabase>>;
let processor: RunningProcessor;
let stripe: Stripe;
let sql: postgres.Sql;

beforeAll(async () => {
  database = await createProcessorTestDatabase('list_paging');
  processor = await startTestProcessor({ databaseUrl: database.url });
  stripe = stripeClient(processor.url, 'sk_test_tenant_a');
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end();
  await processor?.stop();
  await database?.drop();
});

/** Puts the rows in one millisecond, in the given order: 100 µs, 200 µs, ... past it. */
async function inOneMillisecond(table: 'payment_intents' | 'refunds', ids: string[]) {
  for (const [i, id] of ids.entries()) {
    await sql`update ${sql(table)}
      set created_at = '2026-01-01T00:00:00.000Z'::timestamptz + ${`${(i + 1) * 100} microseconds`}::interval
      where id = ${id}`;
  }
}

const pay = (amount: number, customer?: string) =>
  stripe.paymentIntents.create({
    amount,
    currency: 'usd',
    payment_method: 'pm_card_visa',
    confirm: true,
    ...(customer ? { customer } : {}),
  });

describe('lists paged one row at a time list every row once, rows of one millisecond too', () => {
  it('GET /v1/payment_intents', async () => {
    const customer = 'cus_one_millisecond';
    const first = await pay(100, customer);
    const second = await pay(200, customer);
    await inOneMillisecond('payment_intents', [first.id, second.id]);
    const paged = await stripe.paymentIntents
      .list({ customer, limit: 1 })
      .autoPagingToArray({ limit: 10 });
    expect(paged.map((intent) => intent.id)).toEqual([second.id, first.id]);
  });

  it('GET /v1/refunds', async () => {
    const intent = await pay(1000);
    const first = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    const second = await stripe.refunds.create({ payment_intent: intent.id, amount: 200 });
    await inOneMillisecond('refunds', [first.id, second.id]);
    const paged = await stripe.refunds
      .list({ payment_intent: intent.id, limit: 1 })
      .autoPagingToArray({ limit: 10 });
    expect(paged.map((refund) => refund.id)).toEqual([second.id, first.id]);
  });
});
