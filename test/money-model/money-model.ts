/**
 * The reference model of a merchant's money that the model-based search holds the real system
 * to: each payment's money and each Idempotency-Key's binding, as the API documents them. Pure
 * data and functions: the checker replays a batch of concurrent requests in every order.
 */

/** How a request reaches the API: with the merchant's API key, or the operator's session (cockpit). */
export type Transport = 'rest' | 'graphql' | 'trpc' | 'cockpit';
export type MoneyOp = 'capture' | 'void' | 'refund';
type Op = 'pay' | MoneyOp;

/** One request as the search sends it; `payment` is the model's index of its payment. */
export interface ModelRequest {
  op: Op;
  transport: Transport;
  key: string;
  /** The payment acted on (money actions), or the payment a pay makes if it runs. */
  payment: number;
  /** A capture's or refund's amount (undefined: all), a pay's cart quantity. */
  amount?: number;
  /** A pay with manual capture. */
  manual?: boolean;
}

/** What the system answered, reduced to what the model decides. */
export type Answer = { ok: true; id?: string } | { ok: false; code: string };

interface PaymentModel {
  amount: number;
  manual: boolean;
  status: 'processing' | 'authorized' | 'succeeded' | 'captured' | 'voided';
  /** A capture or void accepted and not yet run by the worker. */
  action?: { kind: 'capture' | 'void'; amount?: number };
  /** A capture or void was ever accepted: the payment takes no other. */
  acted: boolean;
  received: number;
  refunded: number;
}

interface Binding {
  op: Op;
  payment: number;
  body: string;
  /** The binding's identity: the ids every answer under it must share. */
  ref: number;
}

/**
 * A row of the key store: one per (operation as its transport names it, key), written by the
 * first request answered under it, compared with a later one with its principal folded in
 * (`keyScope: 'principal'`: the API key, or one operator session).
 */
interface KeyRow {
  principal: string;
  body: string;
  ref: number;
}

export interface Model {
  /** The cockpit's operator session: never started, signed in, or signed out (cookie still sent). */
  session: 'none' | 'active' | 'ended';
  payments: PaymentModel[];
  /** The system's id of each payment the model holds, by index. */
  paymentIds: string[];
  bindings: Record<string, Binding>;
  keyRows: Record<string, KeyRow>;
  /** How many operator sessions were signed in: the cockpit's principal is the latest. */
  sessions: number;
  /** The id the system gave each binding, once an answer showed it. */
  ids: Record<number, string>;
  nextRef: number;
}

export const emptyModel = (): Model => ({
  session: 'none',
  payments: [],
  paymentIds: [],
  bindings: {},
  keyRows: {},
  sessions: 0,
  ids: {},
  nextRef: 0,
});

/** What the model allows one request to answer, applied to `m` (a copy the caller owns). */
type Expected = { ok: true; ref: number } | { ok: false; code: string; or?: string };

const refused = (code: string): Expected => ({ ok: false, code });

/** The key store's row of a request: the cockpit's tRPC and the API key's share one. */
const keyRowOf = (r: ModelRequest) =>
  `${r.transport === 'cockpit' ? 'trpc' : r.transport}:${r.op}:${r.key}`;

/** Whose request it is, as the key store folds it into the fingerprint. */
const principalOf = (m: Model, r: ModelRequest) =>
  r.transport === 'cockpit' ? `session:${m.sessions}` : 'api_key';

/** The request's body as its key's fingerprint sees it (same body, same request). */
const bodyOf = (r: ModelRequest) =>
  JSON.stringify([r.op, r.op === 'pay' ? null : r.payment, r.amount ?? null, r.manual ?? false]);

/**
 * One request applied to the model, in the order the API checks: input, the key's binding
 * (the same request replays, another is 422), then the operation's rules. A refusal binds nothing.
 */
function step(m: Model, r: ModelRequest, unitPrice: number): Expected {
  // Authentication comes first: a cockpit request without a live session changes nothing.
  if (r.transport === 'cockpit' && m.session === 'none') return refused('unauthenticated');
  if (r.transport === 'cockpit' && m.session === 'ended') return refused('invalid_credentials');
  const bound = m.bindings[r.key];
  if (r.op !== 'pay' && r.amount !== undefined && r.amount < 1) {
    // Bad input under a key bound to another request: either refusal is right (REST and tRPC
    // check the input first, GraphQL's guard compares the request first); neither binds.
    return bound
      ? { ok: false, code: 'invalid_input', or: 'idempotency_key_reused' }
      : refused('invalid_input');
  }
  // The transport's own key row first: the guard answers from it before the handler runs.
  const row = m.keyRows[keyRowOf(r)];
  if (row) {
    if (row.principal !== principalOf(m, r) || row.body !== bodyOf(r)) {
      return refused('idempotency_key_reused');
    }
    return { ok: true, ref: row.ref };
  }
  if (bound) {
    // A pay names no payment: its replay answers the one its key made.
    const samePayment = r.op === 'pay' || bound.payment === r.payment;
    // A refund that names no amount asks for "all that is left": under a key whose refund of
    // this payment exists, it is that refund, whatever amount it took (the app keeps the
    // amount refunded, not whether one was named).
    const allThatWasLeft = r.op === 'refund' && r.amount === undefined;
    if (bound.op !== r.op || !samePayment || (bound.body !== bodyOf(r) && !allThatWasLeft)) {
      return refused('idempotency_key_reused');
    }
    m.keyRows[keyRowOf(r)] = { principal: principalOf(m, r), body: bodyOf(r), ref: bound.ref };
    return { ok: true, ref: bound.ref };
  }
  const outcome = r.op === 'pay' ? pay(m, r, unitPrice) : moneyAction(m, r);
  if (!outcome.ok) return outcome;
  const ref = m.nextRef++;
  m.bindings[r.key] = { op: r.op, payment: r.payment, body: bodyOf(r), ref };
  m.keyRows[keyRowOf(r)] = { principal: principalOf(m, r), body: bodyOf(r), ref };
  return { ok: true, ref };
}

function pay(m: Model, r: ModelRequest, unitPrice: number): Expected {
  m.payments[r.payment] = {
    amount: unitPrice * (r.amount ?? 1),
    manual: r.manual ?? false,
    status: 'processing',
    acted: false,
    received: 0,
    refunded: 0,
  };
  return { ok: true, ref: -1 };
}

function moneyAction(m: Model, r: ModelRequest): Expected {
  const p = m.payments[r.payment];
  if (!p) return refused('payment_not_found');
  if (r.op === 'refund') {
    if (p.received === 0) return refused('payment_not_refundable');
    const left = p.received - p.refunded;
    const amount = r.amount ?? left;
    if (amount < 1 || amount > left) return refused('refund_amount_too_large');
    p.refunded += amount;
    return { ok: true, ref: -1 };
  }
  if (p.status !== 'authorized' || p.acted) return refused('payment_not_authorized');
  if (r.op === 'capture' && r.amount !== undefined && r.amount > p.amount) {
    return refused('capture_amount_too_large');
  }
  p.acted = true;
  p.action = { kind: r.op === 'void' ? 'void' : 'capture', amount: r.amount };
  return { ok: true, ref: -1 };
}

/** The worker has run every due job: charges, captures and voids are done. */
export function workerRan(m: Model): void {
  for (const p of m.payments) {
    if (!p) continue;
    if (p.status === 'processing') {
      p.status = p.manual ? 'authorized' : 'succeeded';
      if (!p.manual) p.received = p.amount;
    }
    if (p.action?.kind === 'capture') {
      p.status = 'captured';
      p.received = p.action.amount ?? p.amount;
    } else if (p.action?.kind === 'void') {
      p.status = 'voided';
    }
    p.action = undefined;
  }
}

/** Two requests the key store serialises itself (one key row): one of them may hear 409. */
const sameKeyRow = (a: ModelRequest, b: ModelRequest) => keyRowOf(a) === keyRowOf(b);

/** The model after a batch of requests sent at once, if some order of them explains every answer. */
export function explainBatch(
  m: Model,
  requests: readonly ModelRequest[],
  answers: readonly Answer[],
  unitPrice: number,
): Model | undefined {
  for (const order of permutations(requests.length)) {
    const copy = structuredClone(m);
    if (order.every((i) => explains(copy, requests, answers, i, unitPrice))) return copy;
  }
  return undefined;
}

function explains(
  m: Model,
  requests: readonly ModelRequest[],
  answers: readonly Answer[],
  i: number,
  unitPrice: number,
): boolean {
  const r = requests[i]!;
  const a = answers[i]!;
  // The key store serialises the requests of one key row: a duplicate that finds another
  // running is 409, and another request under that running key is 422 (whatever the first
  // then does). Neither changes anything.
  if (!a.ok && a.code === 'idempotency_key_in_use') {
    return requests.some((o, j) => j !== i && sameKeyRow(o, r));
  }
  if (!a.ok && a.code === 'idempotency_key_reused') {
    const sawAnother = requests.some(
      (o, j) =>
        j !== i &&
        sameKeyRow(o, r) &&
        (bodyOf(o) !== bodyOf(r) || principalOf(m, o) !== principalOf(m, r)),
    );
    if (sawAnother) return true;
  }
  const expected = step(m, r, unitPrice);
  if (!expected.ok || !a.ok) {
    return !expected.ok && !a.ok && (expected.code === a.code || expected.or === a.code);
  }
  if (a.id === undefined) return true;
  const known = m.ids[expected.ref];
  if (known !== undefined) return known === a.id;
  if (Object.values(m.ids).includes(a.id)) return false;
  m.ids[expected.ref] = a.id;
  return true;
}

function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  return permutations(n - 1).flatMap((p) =>
    Array.from({ length: n }, (_, at) => [...p.slice(0, at), n - 1, ...p.slice(at)]),
  );
}
