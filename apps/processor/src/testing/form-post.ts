/** POSTs a form body to the processor the way the Stripe SDK does. */
export async function formPost(
  baseUrl: string,
  path: string,
  body: string,
  options: { secretKey?: string; idempotencyKey?: string } = {},
) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${options.secretKey ?? 'sk_test_tenant_a'}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
    },
    body,
  });
  // Tests read nested Stripe JSON freely; the assertions are the type check.
  // biome-ignore lint/suspicious/noExplicitAny: arbitrary Stripe JSON in tests
  const json = (await response.json()) as Record<string, any>;
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    retryAfter: response.headers.get('retry-after'),
    json,
  };
}
