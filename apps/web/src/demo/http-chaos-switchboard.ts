import {
  type ChaosPart,
  type ChaosSwitchboard,
  ChaosSwitchError,
  ChaosSwitchRateLimited,
  type ProcessorFaultSwitchName,
} from '@once/api/chaos-switchboard';
import { type ProcessorFaultUses, processorFaultStates } from './processor-fault-states.ts';

export interface HttpChaosSwitchboardOptions {
  /** The launcher's control channel (ONCE_CHAOS_URL), loopback only. */
  controlUrl: string;
  /** Its per-run secret (ONCE_CHAOS_SECRET). */
  secret: string;
  /** The processor (PROCESSOR_URL) and its admin token (PROCESSOR_ADMIN_TOKEN). */
  processorUrl: string | undefined;
  processorAdminToken: string;
  /** Where the web process keeps the browsers whose next pay answer it drops. */
  armDropNextResponse: (token: string) => void;
  timeoutMs?: number;
}

/**
 * How long `processor_delay` holds the answer after charging: past the worker's default
 * processor timeout (WORKER_PROCESSOR_TIMEOUT_MS, 10 s), so the worker sees a timeout.
 */
const PROCESSOR_DELAY_FAULT_MS = 12_000;

/**
 * Which request a charge fault hits: the confirm (`POST /v1/payment_intents/:id/confirm`), the
 * call that moves the money, named by the processor's operation, so it never bites a cancel
 * (the reconciler's) or a create (which charges nobody, so a fault there shows nothing).
 */
const CHARGE_FAULT_TARGET = { operation: 'payment_intents.confirm' } as const;

/** The admin API body of each processor fault switch. */
const FAULT_BODIES: Record<ProcessorFaultSwitchName, Record<string, unknown>> = {
  processor_fail_before_charge: { kind: 'fail_before_charge' },
  processor_charge_then_drop: { kind: 'charge_then_drop' },
  processor_delay: { kind: 'delay', delay_ms: PROCESSOR_DELAY_FAULT_MS, when: 'after_charge' },
  processor_fail_after_charge: { kind: 'fail_after_charge' },
  processor_slow_webhook: { kind: 'slow_webhook', delay_ms: 5_000 },
  processor_duplicate_webhook: { kind: 'duplicate_webhook' },
  processor_rate_limit: { kind: 'rate_limit' },
  processor_lock_timeout: { kind: 'lock_timeout' },
};

const FAULT_WORDS: Record<ProcessorFaultSwitchName, string> = {
  processor_fail_before_charge:
    'the next confirm (the call that charges) fails with a 500 before anything is charged',
  processor_charge_then_drop:
    'the next confirm (the call that charges): the charge is made, then the connection is dropped',
  processor_delay: `the next confirm (the call that charges): the charge is made, then its answer waits ${PROCESSOR_DELAY_FAULT_MS / 1000} s (past the worker's timeout)`,
  processor_fail_after_charge:
    'the next confirm (the call that charges): the charge is made, then answered with a 500',
  processor_slow_webhook: 'the next webhook is delivered 5 s late',
  processor_duplicate_webhook: 'the next webhook is delivered twice (same event id)',
  processor_rate_limit:
    'the next confirm (the call that charges) is refused 429 rate_limit before anything runs; the worker retries the same key after a backoff',
  processor_lock_timeout:
    'the next confirm (the call that charges) is refused 429 lock_timeout (Stripe-Should-Retry: true) before anything runs; the worker retries the same key after a backoff',
};

/**
 * The switchboard over HTTP: the launcher's control channel for processes, the processor's
 * admin API (`POST /admin/faults`, `GET /admin/faults/uses`) for its faults.
 *
 * @example
 * const chaos = createHttpChaosSwitchboard({ controlUrl: env.ONCE_CHAOS_URL, secret: env.ONCE_CHAOS_SECRET,
 *   processorUrl: env.PROCESSOR_URL, processorAdminToken: 'once-admin', armDropNextResponse });
 * await chaos.pressLauncherSwitch('kill_worker'); // 'worker-1 (pid 4242) killed with SIGKILL; ...'
 */
export function createHttpChaosSwitchboard(options: HttpChaosSwitchboardOptions): ChaosSwitchboard {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const call = async (path: string, init: RequestInit = {}) => {
    let response: Response;
    try {
      response = await fetch(new URL(path, options.controlUrl), {
        ...init,
        headers: { authorization: `Bearer ${options.secret}` },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new ChaosSwitchError(
        `the launcher's control channel did not answer (${String(error)})`,
      );
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.status === 429) {
      throw new ChaosSwitchRateLimited(
        String(body.error ?? 'pressed too soon'),
        Math.max(1, Number(body.retryAfterSeconds) || 1),
      );
    }
    if (!response.ok) {
      throw new ChaosSwitchError(String(body.error ?? `launcher answered ${response.status}`));
    }
    return body;
  };
  return {
    async parts() {
      return ((await call('/parts')).parts ?? []) as ChaosPart[];
    },
    async pressLauncherSwitch(name, target) {
      const query = target ? `?target=${encodeURIComponent(target)}` : '';
      return String((await call(`/switches/${name}${query}`, { method: 'POST' })).did);
    },
    async armProcessorFault(account, name) {
      if (!options.processorUrl) throw new ChaosSwitchError('PROCESSOR_URL is not set');
      const fault = FAULT_BODIES[name];
      const webhook = name === 'processor_slow_webhook' || name === 'processor_duplicate_webhook';
      const body = {
        account,
        count: 1,
        ...(webhook ? { path_prefix: 'payment_intent.' } : CHARGE_FAULT_TARGET),
        ...fault,
      };
      let response: Response;
      try {
        response = await fetch(new URL('/admin/faults', options.processorUrl), {
          method: 'POST',
          headers: {
            'x-admin-token': options.processorAdminToken,
            'content-type': 'application/json',
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        throw new ChaosSwitchError(`the processor did not answer (${String(error)})`);
      }
      if (!response.ok) {
        throw new ChaosSwitchError(`the processor refused the fault (${response.status})`);
      }
      return `armed on ${account}: ${FAULT_WORDS[name]}`;
    },
    async processorFaults(account) {
      if (!options.processorUrl) throw new ChaosSwitchError('PROCESSOR_URL is not set');
      const url = new URL('/admin/faults/uses', options.processorUrl);
      url.searchParams.set('account', account);
      // The newest use of each fault is all a switch shows.
      url.searchParams.set('limit', '1');
      let response: Response;
      try {
        response = await fetch(url, {
          headers: { 'x-admin-token': options.processorAdminToken },
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        throw new ChaosSwitchError(`the processor did not answer (${String(error)})`);
      }
      if (!response.ok) {
        throw new ChaosSwitchError(`the processor refused to list its faults (${response.status})`);
      }
      const body = (await response.json()) as { data: ProcessorFaultUses[] };
      return processorFaultStates(body.data);
    },
    armDropNextResponse: options.armDropNextResponse,
  };
}
