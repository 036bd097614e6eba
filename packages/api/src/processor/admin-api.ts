import { ProcessorUnreachableError } from './processor-ledger.ts';

/** The processor's admin API: its base URL (PROCESSOR_URL) and `X-Admin-Token` (PROCESSOR_ADMIN_TOKEN). */
export interface ProcessorAdminApi {
  url: string;
  adminToken: string;
  fetch?: typeof fetch;
}

/**
 * One call of the processor's admin API within `timeoutMs` (connect, answer and body): its
 * status and JSON body. Not reached, too slow, not JSON, or a status other than 2xx (and 404
 * when `notFoundIsAnswer`) is a `ProcessorUnreachableError` naming `what`, so a hung or
 * refusing processor costs the cockpit at most `timeoutMs` and degrades it instead of failing.
 */
export async function askProcessorAdmin(
  api: ProcessorAdminApi,
  what: string,
  path: string,
  init: { method?: 'GET' | 'POST'; body?: unknown; timeoutMs: number; notFoundIsAnswer?: boolean },
): Promise<{ status: number; body: unknown }> {
  try {
    const response = await (api.fetch ?? fetch)(new URL(path, api.url), {
      method: init.method ?? 'GET',
      headers: {
        'x-admin-token': api.adminToken,
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(init.timeoutMs),
    });
    if (!response.ok && !(response.status === 404 && init.notFoundIsAnswer)) {
      throw new ProcessorUnreachableError(`${what} answered ${response.status}`);
    }
    return { status: response.status, body: await response.json() };
  } catch (error) {
    if (error instanceof ProcessorUnreachableError) throw error;
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new ProcessorUnreachableError(`${what} not reachable (${reason})`, { cause: error });
  }
}
