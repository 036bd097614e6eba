'use client';

import { useMutation, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { Fragment, useState } from 'react';
import { answeredByServer } from '../../client/error-words.ts';
import { useTRPC } from '../../client/trpc-react.tsx';
import type { ChaosPressResult } from '../../demo/chaos-press.ts';
import {
  type ChaosPart,
  type ChaosSwitchName,
  LAUNCHER_SWITCHES,
} from '../../demo/chaos-switchboard.ts';
import type { ProcessorFaultStatus } from '../../demo/processor-fault-status.ts';
import {
  PROCESSOR_FAULT_SWITCH_FAULTS,
  PROCESSOR_FAULT_SWITCHES,
  type ProcessorFaultSwitchName,
  type ProcessorFaultTargetName,
} from '../../demo/processor-fault-switches.ts';
import { Badge } from './ops-table.tsx';
import { processorFaultLine } from './processor-fault-line.ts';

/** What each switch is called on the button, and what it does, for the audience. */
const SWITCH_TEXT: Record<ChaosSwitchName, { label: string; effect: string }> = {
  kill_worker: {
    label: 'Kill a worker',
    effect: 'SIGKILL one worker; the launcher restarts it and its jobs are taken over.',
  },
  kill_web: {
    label: 'Kill the web server',
    effect: 'SIGKILL the web process; open pages reconnect once it is back.',
  },
  pause_worker: {
    label: 'Pause a worker past its lease',
    effect: 'SIGSTOP one worker until its lease has run out, then SIGCONT.',
  },
  pg_crash_restart: {
    label: 'Crash-restart PostgreSQL',
    effect: 'SIGKILL the database; it restarts on the same data.',
  },
  db_failover: {
    label: 'Fail over the database',
    effect:
      'SIGKILL the primary; Patroni promotes the synchronous standby, the apps follow it, and the old primary rejoins as a standby.',
  },
  drop_next_response: {
    label: "Drop this browser's next payment answer",
    effect: 'The server charges and commits, then closes the connection instead of answering.',
  },
  processor_fail_before_charge: {
    label: 'Processor: fail before charging',
    effect: 'Next charge answers 500, nothing charged.',
  },
  processor_charge_then_drop: {
    label: 'Processor: charge, then drop the connection',
    effect: 'Next charge is made, the worker sees a connection reset.',
  },
  processor_delay: {
    label: 'Processor: charge, answer too late',
    effect:
      "Next charge is made, its answer comes after the worker's timeout and its webhook later still.",
  },
  processor_fail_after_charge: {
    label: 'Processor: charge, then answer 500',
    effect: 'Next charge is made, the worker is told it failed.',
  },
  processor_capture_then_drop: {
    label: 'Processor: capture, then drop the connection',
    effect: 'Next capture is made, the worker sees a connection reset.',
  },
  processor_refund_then_drop: {
    label: 'Processor: refund, then drop the connection',
    effect: 'Next refund is made, the worker sees a connection reset.',
  },
  processor_refund_fail_after: {
    label: 'Processor: refund, then answer 500',
    effect: 'Next refund is made, the worker is told it failed.',
  },
  processor_slow_webhook: {
    label: 'Processor: slow webhook',
    effect: 'Next webhook arrives 5 s late.',
  },
  processor_duplicate_webhook: {
    label: 'Processor: duplicate webhook',
    effect: 'Next webhook is delivered twice with the same event id.',
  },
  processor_rate_limit: {
    label: 'Processor: rate limit (429)',
    effect: 'Next charge is refused 429 before anything runs; the worker retries the same key.',
  },
  processor_lock_timeout: {
    label: 'Processor: lock timeout (429)',
    effect: 'Next charge is refused 429 lock_timeout; the worker retries the same key.',
  },
};

/** A switch as its button names it: `pg_crash_restart` -> "Crash-restart PostgreSQL". */
export function switchLabel(name: ChaosSwitchName): string {
  return SWITCH_TEXT[name].label;
}

/** The processor's switches under the call they break, each group titled by that call. */
const PROCESSOR_GROUP_TITLES: Record<ProcessorFaultTargetName, string> = {
  charge: 'Processor: the next charge',
  capture: 'Processor: the next capture',
  refund: 'Processor: the next refund',
  webhook: 'Processor: the next webhook',
};

// From the API's lists: a switch added there shows up here with its words, no second list.
const GROUPS: { title: string; switches: ChaosSwitchName[] }[] = [
  { title: 'Processes', switches: [...LAUNCHER_SWITCHES] },
  { title: 'Network', switches: ['drop_next_response'] },
  ...Object.entries(PROCESSOR_GROUP_TITLES).map(([target, title]) => ({
    title,
    switches: PROCESSOR_FAULT_SWITCHES.filter(
      (name) => PROCESSOR_FAULT_SWITCH_FAULTS[name].target === target,
    ),
  })),
];

/** The groups with only the switches this system offers (`ops.chaosStatus`), none empty. */
function groupsOffered(offered: readonly ChaosSwitchName[]) {
  return GROUPS.map((group) => ({
    ...group,
    switches: group.switches.filter((name) => offered.includes(name)),
  })).filter((group) => group.switches.length > 0);
}

/**
 * The switches and the parts' state (`ops.chaosStatus`), read every second so a restart is
 * seen as it happens; the strip and the switches share the one query.
 */
export function useChaosStatus() {
  const trpc = useTRPC();
  return useQuery({ ...trpc.ops.chaosStatus.queryOptions(), refetchInterval: 1_000, retry: false });
}

/**
 * The demo's chaos switches and the parts' state, for an operator. Renders nothing unless the
 * launcher enabled the switches (`npm run demo`). Each press says what it did in a live
 * region; the parts list shows the system recovering (up, restarting, paused).
 */
export function ChaosSwitches() {
  const trpc = useTRPC();
  const status = useChaosStatus();
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const press = useMutation(
    trpc.ops.chaosPress.mutationOptions({
      onSuccess: (result: ChaosPressResult) =>
        setOutcome({ ok: true, text: `${SWITCH_TEXT[result.switch].label}: ${result.did}` }),
      onError: (error) => setOutcome({ ok: false, text: error.message }),
    }),
  );

  const data = status.data;
  if (!data?.enabled) return null;
  // No answer at all: the web server is down (a refusal, a 403, is an answer).
  const webDown = status.isError && !answeredByServer(status.error);

  return (
    <section className="card chaos" aria-labelledby="chaos-title" data-testid="chaos-switches">
      <h2 id="chaos-title">Chaos switches (demo)</h2>
      <p className="muted">
        Break a part of the running system and watch it recover. Every charge is still made exactly
        once: check the ledger below.
      </p>
      {data.pressable ? null : (
        <p className="small" data-testid="chaos-needs-operator-code">
          Signed in with an API key: pressing a switch needs the operator code that{' '}
          <code>npm run demo</code> printed. Sign out, then sign in with it.
        </p>
      )}
      <div className="chaos-groups">
        {groupsOffered(data.switches).map((group) => (
          <fieldset key={group.title} className="chaos-group">
            <legend>{group.title}</legend>
            {group.switches.map((name) => {
              // The pressed switch says so until its answer arrives (a kill can take seconds);
              // the others are disabled meanwhile, so one press is in flight at a time.
              const pressing = press.isPending && press.variables?.switch === name;
              const fault = isProcessorFaultSwitch(name) ? name : null;
              return (
                <div key={name} className="chaos-switch">
                  <button
                    type="button"
                    data-switch={name}
                    aria-describedby={`chaos-effect-${name}${fault ? ` fault-use-${fault}` : ''}`}
                    aria-busy={pressing || undefined}
                    disabled={press.isPending || !data.pressable}
                    onClick={() => press.mutate({ switch: name })}
                  >
                    {SWITCH_TEXT[name].label}
                    {pressing ? <span className="switch-pending">: pressing…</span> : null}
                  </button>
                  <span id={`chaos-effect-${name}`} className="small muted">
                    {SWITCH_TEXT[name].effect}
                  </span>
                  {fault ? (
                    <FaultLine
                      name={fault}
                      status={data.processorFaults.find((f) => f.switch === fault)}
                    />
                  ) : null}
                </div>
              );
            })}
          </fieldset>
        ))}
      </div>
      <p
        role="status"
        aria-live="polite"
        data-testid="chaos-outcome"
        className={outcome && !outcome.ok ? 'error' : undefined}
      >
        {outcome?.text ?? ''}
      </p>
      {data.processorError ? (
        <p className="error">The processor's faults could not be read: {data.processorError}</p>
      ) : null}
      <h3 className="card-title">Parts</h3>
      {webDown ? (
        <p className="muted" role="status">
          The web server is not answering (restarting?); showing the last known state.
        </p>
      ) : null}
      {data.launcherError ? <p className="error">{data.launcherError}</p> : null}
      <ul className="chaos-parts" data-testid="chaos-parts">
        {data.parts.map((part: ChaosPart) => (
          <li key={part.name} data-part={part.name} data-state={shownPartState(part, !webDown)}>
            <strong>{part.name}</strong> <Badge value={shownPartState(part, !webDown)} />{' '}
            {part.role ? <span data-role={part.role}>{part.role} </span> : null}
            <span className="small muted">
              {part.pid ? `pid ${part.pid}` : ''}
              {part.restarts > 0
                ? ` · restarted ${part.restarts} time${part.restarts === 1 ? '' : 's'}`
                : ''}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * A part's state as shown: a web process (`web`, or `web-1`..`web-N` behind the proxy) cannot
 * report itself, so while no web answers its last known state is stale and it shows `restarting`.
 */
export function shownPartState(part: ChaosPart, webAnswering: boolean): ChaosPart['state'] {
  return !webAnswering && /^web(-\d+)?$/.test(part.name) ? 'restarting' : part.state;
}

const isProcessorFaultSwitch = (name: ChaosSwitchName): name is ProcessorFaultSwitchName =>
  (PROCESSOR_FAULT_SWITCHES as readonly string[]).includes(name);

/**
 * Under a processor fault switch: armed, or when it was used and on which payment. Always
 * rendered (empty until pressed), so screen readers hear it change when the fault bites.
 */
function FaultLine({
  name,
  status,
}: {
  name: ProcessorFaultSwitchName;
  status: ProcessorFaultStatus | undefined;
}) {
  const parts = processorFaultLine(status);
  return (
    <span
      id={`fault-use-${name}`}
      className="small"
      aria-live="polite"
      data-testid={`fault-use-${name}`}
    >
      {parts.map((part, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts never reorder
        <Fragment key={i}>
          {'href' in part ? (
            <Link href={part.href}>
              <code>{part.id}</code>
            </Link>
          ) : 'iso' in part ? (
            <time dateTime={part.iso} title={part.iso}>
              {part.time}
            </time>
          ) : (
            <span>{part.text}</span>
          )}
        </Fragment>
      ))}
    </span>
  );
}
