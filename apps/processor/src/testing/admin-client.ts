/**
 * A tiny client for the processor's /admin API (apps/processor README), as chaos tests and
 * e2e specs use it: fault injection, ledger and webhook reads. Throws on a non-2xx answer.
 */
export function adminClient(baseUrl: string, token = 'once-admin') {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-admin-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok)
      throw new Error(`${method} ${path} -> ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  return {
    armFault: (fault: Record<string, unknown>) => call('POST', '/admin/faults', fault),
    listFaults: (account?: string) =>
      call('GET', `/admin/faults${account ? `?account=${account}` : ''}`),
    clearFaults: () => call('DELETE', '/admin/faults'),
    ledger: async (query: Record<string, string>) =>
      (await call('GET', `/admin/ledger?${new URLSearchParams(query)}`)) as {
        data: {
          kind: string;
          amount: number;
          payment_intent: string;
          idempotency_key: string | null;
        }[];
        charge_count: number;
      },
    webhookEvents: async (account: string) =>
      (await call('GET', `/admin/webhook-events?account=${account}`)) as {
        data: {
          id: string;
          type: string;
          attempts: number;
          deliveries: number;
          delivered_at: string | null;
          event: { data: { object: Record<string, unknown> } };
        }[];
      },
    createAccount: (id: string, secretKey: string) =>
      call('POST', '/admin/accounts', { id, secret_key: secretKey }),
  };
}
