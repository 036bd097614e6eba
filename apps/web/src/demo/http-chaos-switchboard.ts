import {
  type ChaosPart,
  type ChaosSwitchboard,
  ChaosSwitchError,
  ChaosSwitchRateLimited,
  type LauncherSwitchName,
} from './chaos-switchboard.ts';
import {
  type ArmedProcessorFault,
  type ProcessorFaultUses,
  processorFaultStates,
} from './processor-fault-states.ts';
import {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_TARGETS,
  type ProcessorFaultSwitchName,
} from './processor-fault-switches.ts';

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
 * How late `processor_delay`'s charge webhook arrives: past the held answer, so the webhook does
 * not settle the payment before the scene (kill the worker while it is processing) can play.
 */
const PROCESSOR_DELAY_WEBHOOK_MS = 15_000;

/** The admin API parameters a fault kind needs besides its target (the switch's own call). */
const FAULT_PARAMETERS: Partial<Record<string, Record<string, unknown>>> = {
  delay: { delay_ms: PROCESSOR_DELAY_FAULT_MS, when: 'after_charge' },
  slow_webhook: { delay_ms: 5_000 },
};

/** What each processor fault switch armed, in words for the audience. */
const FAULT_WORDS: Record<ProcessorFaultSwitchName, string> = {
  processor_fail_before_charge:
    'the next confirm (the call that charges) fails with a 500 before anything is charged',
  processor_charge_then_drop:
    'the next confirm (the call that charges): the charge is made, then the connection is dropped',
  processor_delay: `the next confirm (the call that charges): the charge is made, then its answer waits ${PROCESSOR_DELAY_FAULT_MS / 1000} s (past the worker's timeout), and its webhook ${PROCESSOR_DELAY_WEBHOOK_MS / 1000} s late`,
  processor_fail_after_charge:
    'the next confirm (the call that charges): the charge is made, then answered with a 500',
  processor_rate_limit:
    'the next confirm (the call that charges) is refused 429 rate_limit before anything runs; the worker retries the same key after a backoff',
  processor_lock_timeout:
    'the next confirm (the call that charges) is refused 429 lock_timeout (Stripe-Should-Retry: true) before anything runs; the worker retries the same key after a backoff',
  processor_capture_then_drop:
    'the next capture (the call that takes the authorised money): the capture is made, then the connection is dropped',
  processor_refund_then_drop:
    'the next refund (the call that gives money back): the refund is made, then the connection is dropped',
  processor_refund_fail_after:
    'the next refund (the call that gives money back): the refund is made, then answered with a 500',
  processor_slow_webhook: 'the next webhook is delivered 5 s late',
  processor_duplicate_webhook: 'the next webhook is delivered twice (same event id)',
};

/**
 * The admin API bodies that arm one switch's faults, once each, for `account`: its own fault,
 * and for `processor_delay` a slow webhook too (see {@link PROCESSOR_DELAY_WEBHOOK_MS}).
 */
function faultBodies(account: string, name: ProcessorFaultSwitchName): Record<string, unknown>[] {
  const { kind, target } = PROCESSOR_FAULT_SWITCH_FAULTS[name];
  const aim = PROCESSOR_FAULT_TARGETS[target];
  const own = {
    account,
    count: 1,
    kind,
    ...('operation' in aim ? { operation: aim.operation } : { path_prefix: aim.eventTypePrefix }),
    ...FAULT_PARAMETERS[kind],
  };
  if (name !== 'processor_delay') return [own];
  return [
    own,
    {
      account,
      count: 1,
      kind: 'slow_webhook',
      path_prefix: PROCESSOR_FAULT_TARGETS.webhook.eventTypePrefix,
      delay_ms: PROCESSOR_DELAY_WEBHOOK_MS,
    },
  ];
}

/** The switchboard over HTTP: the launcher's control channel, and the processor's admin API. */
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
  /** A read of the processor's admin API: its faults still armed, or their uses. */
  const askProcessor = async <T>(path: string, query: Record<string, string>): Promise<T> => {
    if (!options.processorUrl) throw new ChaosSwitchError('PROCESSOR_URL is not set');
    const url = new URL(path, options.processorUrl);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
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
    return (await response.json()) as T;
  };
  return {
    async parts() {
      return ((await call('/parts')).parts ?? []) as ChaosPart[];
    },
    async launcherSwitches() {
      return ((await call('/switches')).switches ?? []) as LauncherSwitchName[];
    },
    async pressLauncherSwitch(name, target) {
      const query = target ? `?target=${encodeURIComponent(target)}` : '';
      return String((await call(`/switches/${name}${query}`, { method: 'POST' })).did);
    },
    async armProcessorFault(account, name) {
      if (!options.processorUrl) throw new ChaosSwitchError('PROCESSOR_URL is not set');
      for (const body of faultBodies(account, name)) {
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
      }
      return `armed on ${account}: ${FAULT_WORDS[name]}`;
    },
    async processorFaults(account) {
      const [armed, used] = await Promise.all([
        askProcessor<{ data: ArmedProcessorFault[] }>('/admin/faults', { account }),
        // The newest use of each fault is all a switch shows.
        askProcessor<{ data: ProcessorFaultUses[] }>('/admin/faults/uses', { account, limit: '1' }),
      ]);
      return processorFaultStates(armed.data, used.data);
    },
    armDropNextResponse: options.armDropNextResponse,
  };
}
