/**
 * A Jepsen-style history: each client request an `invoke` and one completion, `ok`, `fail`
 * (nothing happened, or a decline) or `info` (unknown: timeout, reset, 5xx, lost response);
 * faults and process events share it, so a violation shows with all that happened around it.
 */
export type OpType = 'invoke' | 'ok' | 'fail' | 'info';

export interface ClientEvent {
  type: OpType;
  /** Milliseconds since the run started. */
  at: number;
  /** Pairs an invoke with its completion. */
  op: number;
  intent: string;
  tenantId: string;
  key: string;
  process: string;
  /**
   * reuse: same key, other cart; late: a duplicate after success; capture | void | refund:
   * operator actions under their own key; challenge: a 3-D Secure shopper's answer.
   */
  f: 'pay' | 'status' | 'reuse' | 'late' | 'capture' | 'void' | 'refund' | 'challenge';
  /** Completion details: HTTP status, payment id, state shown, replay flag, error. */
  status?: number;
  paymentId?: string;
  state?: string;
  replayed?: boolean;
  retryAfterSeconds?: number;
  error?: string;
  /** The request reached the server but its answer was dropped on purpose. */
  lostResponse?: boolean;
  /** A refund answer: the refund it names and the state it showed. */
  refundId?: string;
  refundState?: string;
  /** A capture or refund request: the amount asked for (absent: all there is). */
  amount?: number;
  /** A challenge: what the shopper answered (`leave`: nothing, the page was left). */
  answer?: 'complete' | 'fail' | 'leave';
  /** An operator request sent over REST or GraphQL (absent: tRPC, as the cockpit sends). */
  transport?: 'rest' | 'graphql';
  /** Sent at the same moment as another operator's action on the payment, under another key. */
  race?: boolean;
  /** Sent with an operator session already signed out on the server: must change nothing. */
  revokedSession?: boolean;
}

/** The operator's money actions on a payment, each under its own key. */
export const isOperatorRequest = (e: ClientEvent) =>
  e.f === 'capture' || e.f === 'void' || e.f === 'refund';

export interface NemesisEvent {
  type: 'nemesis';
  at: number;
  /** start / end of a fault (end: restarted, resumed, disarmed). */
  phase: 'start' | 'end';
  id: string;
  kind: string;
  target: string;
  detail?: string;
  /** A processor fault's id (end of its arming): its consumption is read after the run. */
  faultId?: string;
  /** What the fault did, where the injector can count it (backends a storm terminated). */
  bit?: number;
}

export interface LifecycleEvent {
  type: 'process';
  at: number;
  process: string;
  /** exited: a death nobody planned; killed/restarted: the nemesis' doing. */
  event: 'exited' | 'killed' | 'restarted' | 'stopped' | 'resumed';
  detail?: string;
}

export interface MarkEvent {
  type: 'mark';
  at: number;
  name: 'faults_start' | 'heal_start' | 'healed' | 'converged';
}

export type HistoryEvent = ClientEvent | NemesisEvent | LifecycleEvent | MarkEvent;

/** Appends events with a time relative to the run's start. */
export class History {
  readonly events: HistoryEvent[] = [];
  private nextOp = 1;
  readonly startedAt: number;

  /** `sink` gets each event as it is recorded, so a run that hangs still leaves its history. */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly sink?: (event: HistoryEvent) => void,
  ) {
    this.startedAt = now();
  }

  private push(event: HistoryEvent): void {
    this.events.push(event);
    this.sink?.(event);
  }

  elapsed(): number {
    return this.now() - this.startedAt;
  }

  /** Records an invoke and returns a completer that records its ok / fail / info. */
  invoke(
    base: Pick<ClientEvent, 'intent' | 'tenantId' | 'key' | 'process' | 'f'>,
  ): (type: Exclude<OpType, 'invoke'>, detail?: Partial<ClientEvent>) => ClientEvent {
    const op = this.nextOp++;
    this.push({ type: 'invoke', at: this.elapsed(), op, ...base });
    let done = false;
    return (type, detail = {}) => {
      if (done) throw new Error(`op ${op} completed twice`);
      done = true;
      const event: ClientEvent = { ...base, ...detail, type, at: this.elapsed(), op };
      this.push(event);
      return event;
    };
  }

  nemesis(event: Omit<NemesisEvent, 'type' | 'at'>): void {
    this.push({ type: 'nemesis', at: this.elapsed(), ...event });
  }

  lifecycle(event: Omit<LifecycleEvent, 'type' | 'at'>): void {
    this.push({ type: 'process', at: this.elapsed(), ...event });
  }

  mark(name: MarkEvent['name']): void {
    this.push({ type: 'mark', at: this.elapsed(), name });
  }
}
