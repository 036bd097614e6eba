import { signPayload } from './sign-payload.ts';
import { WEBHOOK_TIMEOUT_MS, type WebhookTarget } from './webhook-target.ts';

/** What the endpoint answered one POST: its status (null: no answer) and why it failed. */
export interface PostResult {
  status: number | null;
  /** Null on a 2xx. */
  error: string | null;
}

/**
 * POSTs one event's frozen payload to the endpoint, signed now, as Stripe sends it. Never
 * throws: a refused connection or a timeout is a failed attempt like a 500.
 */
export async function postEvent(target: WebhookTarget, payload: string): Promise<PostResult> {
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'stripe-signature': signPayload(payload, target.secret),
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      },
      body: payload,
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    await response.arrayBuffer().catch(() => {});
    return { status: response.status, error: response.ok ? null : `HTTP ${response.status}` };
  } catch (error) {
    return {
      status: null,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}
