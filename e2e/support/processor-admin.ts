/** The processor's admin API (apps/processor README): fault injection for chaos specs. */
export function processorAdmin(
  processorUrl: string,
  token = process.env.PROCESSOR_ADMIN_TOKEN ?? 'once-admin',
) {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${processorUrl}${path}`, {
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
    /** e.g. { account: 'acct_tenant_a', kind: 'charge_then_drop', method: 'POST', path_prefix: '/v1/payment_intents', count: 1 } */
    armFault: (fault: Record<string, unknown>) => call('POST', '/admin/faults', fault),
    clearFaults: () => call('DELETE', '/admin/faults'),
  };
}
