/**
 * A REST client for `POST /api/v1/payments` that behaves like a careful integrator during an
 * outage: one `Idempotency-Key` per checkout, retried until a definite answer; each attempt is
 * kept, so a test can check that the web failed closed (503 problem+json).
 */
export interface AttemptRecord {
  status: number | 'network_error';
  /** `code` of the problem+json body, when there was one. */
  code?: string;
  contentType?: string;
}

export interface CheckoutOutcome {
  key: string;
  /** The payment id of a 201 or 200; undefined if none came before the deadline. */
  paymentId?: string;
  attempts: AttemptRecord[];
}

const TENANT_A_API_KEY = 'once_test_tenant_a';

const body = JSON.stringify({ lines: [{ productId: 'book_sre', quantity: 1 }] });

/** One POST; never throws (a refused connection is recorded as `network_error`). */
export async function postPayment(
  webUrl: string,
  key: string,
): Promise<AttemptRecord & { paymentId?: string }> {
  try {
    const response = await fetch(`${webUrl}/api/v1/payments`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TENANT_A_API_KEY}`,
        'idempotency-key': key,
        'content-type': 'application/json',
      },
      body,
      signal: AbortSignal.timeout(20_000),
    });
    const contentType = response.headers.get('content-type') ?? undefined;
    const json = (await response.json().catch(() => undefined)) as
      | { code?: string; paymentId?: string }
      | undefined;
    return {
      status: response.status,
      contentType,
      code: json?.code,
      // 201 new or replayed; 200 is the payment this key already made (found by its key).
      paymentId: response.status === 201 || response.status === 200 ? json?.paymentId : undefined,
    };
  } catch {
    return { status: 'network_error' };
  }
}

/**
 * Sends one checkout and retries it with the SAME key on anything that is not a 201/200, until
 * `deadline` (epoch ms). 503 and 409 are the expected answers while the database is away or
 * the key's first attempt is still being decided.
 */
export async function checkoutUntilAccepted(
  webUrl: string,
  key: string,
  deadline: number,
): Promise<CheckoutOutcome> {
  const attempts: AttemptRecord[] = [];
  while (Date.now() < deadline) {
    const { paymentId, ...attempt } = await postPayment(webUrl, key);
    attempts.push(attempt);
    if (paymentId) return { key, paymentId, attempts };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { key, attempts };
}
