/** One recorded event as `ops.paymentTimeline` returns it. */
export interface TimelineEventData {
  seq: number;
  at: string;
  actor: string;
  kind: string;
  detail: Record<string, unknown>;
}

/** How an event reads in the picture: an arrow between two lanes, or a mark on one. */
export interface TimelineStep {
  /** Unique within the timeline: the event's seq, or a derived step's own key. */
  key: string;
  seq: number;
  at: string;
  from: string;
  /** The lane the call goes to; equal to `from` for something that happened within a process. */
  to: string;
  /** Short, for the arrow. */
  label: string;
  /** Longer, for the table and the tooltip. */
  description: string;
  tone: 'neutral' | 'ok' | 'warn' | 'bad';
  /**
   * What the step draws besides a call or a dot: `fault` a call the fault broke (a cross at
   * its end), `held` a call whose answer its caller never heard (no arrowhead: nothing came
   * back), `lost` a process that stopped answering (killed or paused by a switch, or its lease
   * ran out), `gap` time passing with nothing recorded (across every lane).
   */
  marker?: 'fault' | 'held' | 'lost' | 'gap';
}

/** Quiet time between two events that is drawn as a gap: a lease wait, a backoff. */
const GAP_MS = 3_000;

/** Lanes in the order a payment travels; workers go where `worker:*` is, by first appearance. */
const LANE_ORDER = [
  'browser',
  'api_client',
  'operator',
  'web',
  'worker:*',
  'processor',
  'webhook',
  'reconciler',
];

/** How a lane is named on screen. */
export function laneTitle(lane: string): string {
  if (lane.startsWith('worker:')) {
    const [id, run] = lane.slice('worker:'.length).split(RUN_SEPARATOR);
    return run ? `${id} (${run})` : (id ?? lane);
  }
  if (lane === 'api_client') return 'API client';
  return lane;
}

/**
 * Every process that did something or was called, in the order a payment travels; the browser
 * and the web are always there, so an empty timeline still reads as the start of a story.
 */
export function lanesOf(steps: readonly TimelineStep[]): string[] {
  const seen = new Set<string>(['web']);
  for (const step of steps) {
    seen.add(step.from);
    seen.add(step.to);
  }
  if (!seen.has('api_client')) seen.add('browser');
  const rank = (lane: string) => {
    const exact = LANE_ORDER.indexOf(lane);
    if (exact >= 0) return exact;
    return lane.startsWith('worker:') ? LANE_ORDER.indexOf('worker:*') : LANE_ORDER.length;
  };
  // Stable sort keeps workers in order of first appearance.
  return [...seen].sort((a, b) => rank(a) - rank(b));
}

const tail = (value: unknown) =>
  typeof value === 'string' && value.length > 14 ? `…${value.slice(-10)}` : String(value ?? '');

/**
 * What broke a call, in the words of the chaos switches: a 500, an answer that came too late,
 * a dropped connection; anything else as recorded.
 */
function faultWords(error: unknown): string {
  const text = String(error ?? 'no answer');
  if (/^http_5\d\d/.test(text)) return `${text.slice(5, 8)} answered`;
  if (/^connection:/.test(text)) {
    return /time(d)? ?out/i.test(text) ? 'answer too late' : 'connection dropped';
  }
  return text;
}

/** What one processor call answered, in words: charged, replayed, 409 in flight, failed... */
function callResult(detail: Record<string, unknown>): { text: string; tone: TimelineStep['tone'] } {
  const status = typeof detail.status === 'string' ? detail.status : undefined;
  switch (detail.result) {
    case 'replayed':
      return { text: `replayed${status ? ` (${status})` : ''}`, tone: 'ok' };
    case 'in_flight':
      return { text: '409 in flight', tone: 'warn' };
    case 'failed':
      return { text: `failed: ${faultWords(detail.error)}`, tone: 'warn' };
    case 'declined':
      return { text: 'declined', tone: 'bad' };
    case 'rejected':
      return { text: `rejected: ${String(detail.error ?? '')}`, tone: 'bad' };
    default:
      if (detail.call === 'confirm' && status === 'succeeded')
        return { text: 'charged', tone: 'ok' };
      if (status === 'canceled') return { text: 'canceled', tone: 'neutral' };
      return { text: status ?? 'ok', tone: 'neutral' };
  }
}

/** How a guarded request was answered, in words (a refusal's code is shown as it is). */
const ANSWER_WORDS: Record<string, string> = {
  executed: 'executed (the first request: it acted)',
  replayed: 'replayed (the stored answer; nothing acted again)',
  idempotency_key_in_use: '409: the first request with this key was still running',
  idempotency_outcome_unknown: "409: the first request's outcome is unknown, being reconciled",
  idempotency_key_reused: '422: the key was already used for a different request',
};

/** A refusal's tone: the key in use asks to come back later; any other refusal is bad news. */
const refusalTone = (answer: string): TimelineStep['tone'] =>
  answer === 'idempotency_key_in_use' ? 'warn' : 'bad';

/** `ops.refundPayment` → `refund`. */
export function operationWords(operation: unknown): string {
  const name = String(operation ?? '').replace(/^ops\./, '');
  return name.replace(/Payment$/, '') || 'action';
}

/**
 * A recorded event as a step of the picture. Unknown kinds still show (a mark on their actor's
 * lane), so a newer writer never makes an older cockpit hide an event.
 */
export function stepOf(event: TimelineEventData): TimelineStep {
  const d = event.detail;
  const to = typeof d.to === 'string' ? d.to : event.actor;
  const base = { key: String(event.seq), seq: event.seq, at: event.at, from: event.actor, to };
  switch (event.kind) {
    case 'pay.attempt': {
      const replayed = d.replayed === true;
      // Refused by its key (409, 422): nothing ran, nothing was charged.
      if (typeof d.answer === 'string') {
        return {
          ...base,
          label: `pay: ${d.answer}`,
          description: `Checkout attempt over ${String(d.transport ?? 'trpc')}, Idempotency-Key ${String(d.key)}: ${ANSWER_WORDS[d.answer] ?? `refused (${d.answer})`}`,
          tone: refusalTone(d.answer),
        };
      }
      return {
        ...base,
        label: replayed ? 'pay again: replayed' : 'pay',
        description: `${replayed ? 'Retry answered as a replay (not charged again)' : 'Checkout attempt'} over ${String(d.transport ?? 'trpc')}, Idempotency-Key ${String(d.key)}${d.source === 'stored_response' ? ', from the stored response' : ''}`,
        tone: replayed ? 'ok' : 'neutral',
      };
    }
    case 'operator.attempt': {
      const answer = String(d.answer);
      const action = operationWords(d.operation);
      return {
        ...base,
        label: `${action}: ${answer}`,
        description: `Operator's ${action} with Idempotency-Key ${String(d.key)}: ${ANSWER_WORDS[answer] ?? `refused (${answer})`}`,
        tone:
          answer === 'executed' ? 'neutral' : answer === 'replayed' ? 'ok' : refusalTone(answer),
      };
    }
    case 'payment.committed':
      return {
        ...base,
        label: 'payment + outbox committed',
        description: `Payment, outbox job ${String(d.job)} and the key's stored response committed in one transaction; downstream key ${String(d.downstreamKey)}`,
        tone: 'neutral',
      };
    case 'job.claimed': {
      const takeover = d.takeover === true;
      return {
        ...base,
        label: takeover ? `took over (attempt ${d.attempt})` : `claimed (attempt ${d.attempt})`,
        description: takeover
          ? `Claimed job ${String(d.job)}, attempt ${d.attempt}: the lease of ${String(d.previousWorker ?? 'another worker')} had expired`
          : `Claimed job ${String(d.job)}, attempt ${d.attempt} of ${d.maxAttempts}`,
        tone: takeover ? 'warn' : 'neutral',
      };
    }
    case 'processor.call': {
      const result = callResult(d);
      const failed = d.result === 'failed';
      return {
        ...base,
        label: `${String(d.call)}: ${result.text}`,
        description: `${String(d.call)}${d.key ? ` with key ${String(d.key)}` : ''}${d.intent ? ` on ${String(d.intent)}` : ''}: ${result.text}${failed && d.error ? ` (${String(d.error)})` : ''}`,
        tone: result.tone,
        ...(failed ? { marker: 'fault' as const } : {}),
      };
    }
    case 'intent.recorded':
      return {
        ...base,
        label: `intent ${tail(d.intent)} recorded`,
        description: `PaymentIntent ${String(d.intent)} recorded on the payment (the only intent ever confirmed)`,
        tone: 'neutral',
      };
    case 'outcome.recorded': {
      const outcome = (d.outcome ?? {}) as { kind?: string; reason?: string; code?: string };
      const retry = d.jobNow === 'retry_scheduled';
      const tone: TimelineStep['tone'] =
        outcome.kind === 'succeeded'
          ? 'ok'
          : retry
            ? 'warn'
            : outcome.kind === 'declined'
              ? 'bad'
              : 'neutral';
      return {
        ...base,
        label: retry
          ? `${outcome.kind}: retry in ${Math.round(Number(d.retryInMs ?? 0))} ms`
          : `recorded ${outcome.kind} (job ${String(d.jobNow)})`,
        description: `Outcome ${outcome.kind}${outcome.reason ? ` (${outcome.reason})` : ''}${outcome.code ? ` (${outcome.code})` : ''} recorded; job ${String(d.jobNow)}`,
        tone,
      };
    }
    case 'job.finished':
      return {
        ...base,
        label: `job done: already ${String(d.paymentWas)}`,
        description: `Job ${String(d.job)} done at attempt ${d.attempt} without calling the processor: the payment was already ${String(d.paymentWas)}`,
        tone: 'ok',
      };
    case 'webhook.applied':
    case 'webhook.ignored':
    case 'webhook.duplicate': {
      const what = event.kind.slice('webhook.'.length);
      return {
        ...base,
        label: `webhook ${what === 'duplicate' ? 'duplicate ignored' : what}`,
        description: `${String(d.type)} (${String(d.eventId)}): ${what === 'duplicate' ? 'redelivery answered from the stored answer, nothing changed' : `${what}, ${String(d.outcome)}`}`,
        tone: what === 'applied' ? 'ok' : 'neutral',
      };
    }
    case 'chaos.pressed': {
      const signal = SWITCH_SIGNALS[String(d.switch)] ?? 'pressed';
      return {
        ...base,
        label: `${String(d.switch)}: ${signal}`,
        description: `Chaos switch ${String(d.switch)} pressed: ${String(d.did ?? '')}`,
        tone: 'bad',
      };
    }
    case 'reconciler.decided':
      return {
        ...base,
        label: `${String(d.lookup)}: ${String(d.found)} → ${String(d.decision)}`,
        description: `Reconciler asked the processor (${String(d.lookup)}), found ${String(d.found)}, decided ${String(d.decision)}`,
        tone: d.decision === 'succeeded' ? 'ok' : d.decision === 'failed' ? 'bad' : 'warn',
      };
    default:
      return { ...base, label: event.kind, description: JSON.stringify(d), tone: 'neutral' };
  }
}

/** The signal each process switch sends the worker it hits. */
const SWITCH_SIGNALS: Record<string, string> = { kill_worker: 'SIGKILL', pause_worker: 'SIGSTOP' };

/** Between a worker's id and its run in a lane name: `worker:worker-1#run 2`. */
const RUN_SEPARATOR = '#';

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/**
 * The whole picture of a payment: its events as steps, each process run in its own lane, and
 * what the events imply drawn too:
 * - a worker whose job is claimed again after its lease ran out stopped answering (killed or
 *   paused): a `lost` mark on its lane at the claim;
 * - a worker id that claims its own job again is a new run of that id (the launcher restarted
 *   it under the same name): from then on it draws in a lane of its own, `worker-1 (run 2)`,
 *   so it never "takes over" from itself on one line;
 * - `GAP_MS` or more without an event (a lease wait, a backoff) is a `gap` step.
 */
export function timelineOf(events: readonly TimelineEventData[]): {
  lanes: string[];
  steps: TimelineStep[];
} {
  const steps: TimelineStep[] = [];
  // Per worker id: which run its events belong to now.
  const runs = new Map<string, number>();
  const laneOf = (actor: string) => {
    if (!actor.startsWith('worker:')) return actor;
    const run = runs.get(actor) ?? 1;
    return run === 1 ? actor : `${actor}${RUN_SEPARATOR}run ${run}`;
  };
  // Per lane: its last recorded event (which step, which kind), to tell what it was doing when
  // it stopped; and the lanes a switch stopped, whose lease's end is then no second cross.
  const lastOfLane = new Map<string, { index: number; event: TimelineEventData }>();
  const stoppedBySwitch = new Set<string>();
  /**
   * A worker stopped right after recording its intent was waiting on the confirm it sends next
   * (the answer held by the processor, or never heard): drawn after the intent, no arrowhead.
   */
  const drawHeldConfirm = (lane: string) => {
    const last = lastOfLane.get(lane);
    if (last?.event.kind !== 'intent.recorded') return;
    steps.splice(last.index + 1, 0, {
      key: `held-${last.event.seq}`,
      seq: last.event.seq,
      at: last.event.at,
      from: lane,
      to: 'processor',
      label: 'confirm: no answer heard',
      description: `The confirm ${laneTitle(lane)} sent after the intent was recorded (${String(last.event.detail.intent ?? '')}): its answer was never recorded (held by the processor, or the worker stopped before it came)`,
      tone: 'warn',
      marker: 'held',
    });
    lastOfLane.delete(lane);
  };
  let previousAt: number | undefined;
  for (const event of events) {
    const at = Date.parse(event.at);
    if (previousAt !== undefined && at - previousAt >= GAP_MS) {
      steps.push({
        key: `gap-${event.seq}`,
        seq: event.seq,
        at: event.at,
        from: '',
        to: '',
        label: `${seconds(at - previousAt)} with nothing recorded`,
        description: `${seconds(at - previousAt)} passed with nothing recorded (a lease running out, a backoff, a process restarting)`,
        tone: 'neutral',
        marker: 'gap',
      });
    }
    previousAt = at;
    const d = event.detail;
    const step = stepOf(event);
    if (
      event.kind === 'chaos.pressed' &&
      typeof d.to === 'string' &&
      SWITCH_SIGNALS[String(d.switch)]
    ) {
      const hit = laneOf(d.to);
      drawHeldConfirm(hit);
      steps.push({ ...step, from: laneOf(step.from), to: hit });
      const killed = d.switch === 'kill_worker';
      steps.push({
        key: `stopped-${event.seq}`,
        seq: event.seq,
        at: event.at,
        from: hit,
        to: hit,
        label: killed ? 'killed' : 'paused',
        description: `${laneTitle(hit)} ${killed ? 'killed (SIGKILL)' : 'paused (SIGSTOP)'} by the chaos switch: ${String(d.did ?? '')}`,
        tone: 'bad',
        marker: 'lost',
      });
      stoppedBySwitch.add(hit);
      continue;
    }
    if (event.kind === 'job.claimed' && d.takeover === true && d.previousWorker) {
      const previous = `worker:${String(d.previousWorker)}`;
      const lostLane = laneOf(previous);
      drawHeldConfirm(lostLane);
      const marked = stoppedBySwitch.has(lostLane);
      steps.push({
        key: `lost-${event.seq}`,
        seq: event.seq,
        at: event.at,
        from: lostLane,
        to: lostLane,
        // The switch's press already shows where it stopped: here only its lease ends.
        ...(marked
          ? {
              label: 'lease ran out',
              description: `${laneTitle(lostLane)}'s lease on job ${String(d.job)} ran out`,
              tone: 'warn' as const,
            }
          : {
              label: 'stopped answering',
              description: `${laneTitle(lostLane)} stopped answering: its lease on job ${String(d.job)} ran out (killed or paused)`,
              tone: 'bad' as const,
              marker: 'lost' as const,
            }),
      });
      if (previous === event.actor) runs.set(event.actor, (runs.get(event.actor) ?? 1) + 1);
    }
    const placed = { ...step, from: laneOf(step.from), to: laneOf(step.to) };
    steps.push(placed);
    lastOfLane.set(placed.from, { index: steps.length - 1, event });
  }
  return { lanes: lanesOf(steps.filter((step) => step.marker !== 'gap')), steps };
}
