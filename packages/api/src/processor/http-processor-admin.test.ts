import { describe, expect, it } from 'vitest';
import { createHttpProcessorWebhookDeliveries } from './http-processor-admin.ts';
import { ProcessorUnreachableError } from './processor-admin.ts';

// The processor's admin answers as apps/processor/src/webhook-resend.test.ts pins them, read
// into the cockpit's shape; the real round trip is e2e/tests/webhook-deliveries.spec.ts.

const adminRow = (id: string, object: Record<string, unknown>) => ({
  id,
  account: 'acct_tenant_a',
  type: 'charge.refunded',
  status: 'pending',
  attempts: 2,
  deliveries: 0,
  delivered_at: null,
  next_attempt_at: '2026-01-01T00:00:10.000Z',
  last_status: null,
  last_error: 'TypeError: fetch failed',
  created: '2026-01-01T00:00:00.000Z',
  event: { id, data: { object } },
});

function fakeFetch(answer: (url: URL, init: RequestInit) => Response) {
  const calls: { url: URL; init: RequestInit }[] = [];
  const fetch = (async (url: URL, init: RequestInit) => {
    calls.push({ url, init });
    return answer(url, init);
  }) as unknown as typeof globalThis.fetch;
  return { calls, fetch };
}

const clientWith = (fetch: typeof globalThis.fetch) =>
  createHttpProcessorWebhookDeliveries({ url: 'http://processor', adminToken: 'tok', fetch });

describe('createHttpProcessorWebhookDeliveries', () => {
  it('lists one account (one intent) newest first, naming each event’s intent and payment', async () => {
    const { calls, fetch } = fakeFetch(() =>
      Response.json({
        data: [
          adminRow('evt_old', { id: 'pi_1', metadata: { payment_id: 'pay_1' } }),
          adminRow('evt_new', { id: 'ch_1', payment_intent: 'pi_1' }),
        ],
      }),
    );
    const listed = await clientWith(fetch).list('acct_tenant_a', {
      paymentIntentId: 'pi_1',
      limit: 5,
    });
    expect(listed.map((d) => [d.eventId, d.paymentIntentId, d.paymentId])).toEqual([
      ['evt_new', 'pi_1', null],
      ['evt_old', 'pi_1', 'pay_1'],
    ]);
    expect(listed[0]).toMatchObject({ status: 'pending', attempts: 2, lastStatus: null });
    expect(String(calls[0]!.url)).toBe(
      'http://processor/admin/webhook-events?account=acct_tenant_a&limit=5&payment_intent=pi_1',
    );
    expect(new Headers(calls[0]!.init.headers).get('x-admin-token')).toBe('tok');
  });

  it('resends within the account; a 404 is "no such event", never an error', async () => {
    const { calls, fetch } = fakeFetch((url) =>
      url.pathname.includes('evt_1')
        ? Response.json({
            delivered: true,
            status: 200,
            error: null,
            webhook_event: { ...adminRow('evt_1', { id: 'pi_1' }), status: 'delivered' },
          })
        : Response.json({ error: { message: 'No such webhook event' } }, { status: 404 }),
    );
    const client = clientWith(fetch);
    expect(await client.resend('acct_tenant_a', 'evt_1')).toMatchObject({
      delivered: true,
      status: 200,
      delivery: { eventId: 'evt_1', status: 'delivered' },
    });
    expect(calls[0]!.init).toMatchObject({
      method: 'POST',
      body: JSON.stringify({ account: 'acct_tenant_a' }),
    });
    expect(await client.resend('acct_tenant_a', 'evt_2')).toBeUndefined();
  });

  it('a refused connection or a 5xx is ProcessorUnreachableError', async () => {
    const down = clientWith((async () => {
      throw new TypeError('fetch failed');
    }) as unknown as typeof fetch);
    await expect(down.list('acct_tenant_a', { limit: 1 })).rejects.toThrow(
      ProcessorUnreachableError,
    );
    const failing = clientWith(fakeFetch(() => new Response('{}', { status: 500 })).fetch);
    await expect(failing.resend('acct_tenant_a', 'evt_1')).rejects.toThrow(
      ProcessorUnreachableError,
    );
  });
});
