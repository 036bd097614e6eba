/**
 * The reference model of a merchant's money that the model-based search holds the real system
 * to: each payment's money and each Idempotency-Key's binding, as the API documents them. Pure
 * data and functions: the checker replays a batch of concurrent requests in every order.
 */

/**
 * How a request reaches the API: with the merchant's API key (REST, GraphQL, tRPC), the
 * operator's session (cockpit), or a shopper's session (the checkout's tRPC).
 */
export type Transport = 'rest' | 'graphql' | 'trpc' | 'cockpit' | 'shopper';
export type MoneyOp = 'capture' | 'void' | 'refund';
/** What a request asks the API for. */
export type RequestOp = 'pay' | MoneyOp;
/** `rotate` (tenant a's API key replaced) and `signout` are events a batch races with. */
type Op = RequestOp | 'rotate' | 'signout';
/** The merchants: `a` (the cockpit's and the shoppers'), `b` (its API key only). */
export type Tenant = 'a' | 'b';

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
  /** Whose API key (default `a`); the cockpit and the shoppers are `a`'s. */
  tenant?: Tenant;
  /** Which shopper session (transport `shopper`). */
  shopper?: number;
  /** The generation of tenant a's API key it was sent with (a stale one is refused). */
  keyGen?: number;
}

/** What the system answered, reduced to what the model decides. */
export type Answer = { ok: true; id?: string } | { ok: false; code: string };

interface PaymentModel {
  tenant: Tenant;
  /** The checkout key that made it, and who placed it (a shopper reads only its own). */
  key: string;
  placedBy: string;
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
 * A row of the key store: one per (tenant, operation as its transport names it, key), written
 * by the first request answered under it, compared with a later one by its body alone: the key
 * is the merchant's (`keyScope: 'tenant'`), whichever of its API keys or sessions sends it.
 */
interface KeyRow {
  body: string;
  ref: number;
}

export interface Model {
  /** The cockpit's operator session: never started, signed in, or ended (cookie still sent). */
  session: 'none' | 'active' | 'ended';
  /** The session was opened with tenant a's API key: a rotation of that key ends it. */
  sessionByKey: boolean;
  /** How many times tenant a's API key was rotated in this run. */
  keyGen: number;
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
  sessionByKey: false,
  keyGen: 0,
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

/** Each merchant's price of the one product the search buys. */
type Prices = Record<Tenant, number>;

const tenantOf = (r: ModelRequest): Tenant => r.tenant ?? 'a';
const byApiKey = (r: ModelRequest) => r.transport !== 'cockpit' && r.transport !== 'shopper';

/** The key store's row of a request: the cockpit's, the shoppers' and the API key's tRPC share one. */
const keyRowOf = (r: ModelRequest) =>
  `${tenantOf(r)}:${byApiKey(r) ? r.transport : 'trpc'}:${r.op}:${r.key}`;

/** Who placed a payment, as a shopper's read compares it. */
const placerOf = (m: Model, r: ModelRequest) => {
  if (r.transport === 'cockpit') return `session:${m.sessions}`;
  return r.transport === 'shopper' ? `shopper:${r.shopper}` : 'api_key';
};

/** The request's body as its key's fingerprint sees it (same body, same request). */
const bodyOf = (r: ModelRequest) =>
  JSON.stringify([r.op, r.op === 'pay' ? null : r.payment, r.amount ?? null, r.manual ?? false]);

/** Who may not send it at all: a refusal before the key store, changing nothing. */
function credentialRefusal(m: Model, r: ModelRequest): string | undefined {
  if (r.transport === 'cockpit') {
    if (m.session === 'none') return 'unauthenticated';
    if (m.session === 'ended') return 'invalid_credentials';
  }
  // An API key replaced by a rotation opens nothing from then on.
  if (byApiKey(r) && tenantOf(r) === 'a' && (r.keyGen ?? 0) !== m.keyGen) {
    return 'invalid_credentials';
  }
  if (r.transport === 'shopper' && r.op !== 'pay') return 'operator_required';
  return undefined;
}

/**
 * One request applied to the model, in the order the API checks: credential, input, the key's
 * binding (the same request replays, another is 422), then the operation's rules. A refusal
 * binds nothing.
 */
function step(m: Model, r: ModelRequest, prices: Prices): Expected {
  if (r.op === 'rotate') {
    m.keyGen++;
    if (m.sessionByKey && m.session === 'active') m.session = 'ended';
    return { ok: true, ref: -1 };
  }
  if (r.op === 'signout') {
    if (m.session === 'active') m.session = 'ended';
    return { ok: true, ref: -1 };
  }
  const noCredential = credentialRefusal(m, r);
  if (noCredential) return refused(noCredential);
  const bindingKey = `${tenantOf(r)}:${r.key}`;
  const bound = m.bindings[bindingKey];
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
    if (row.body !== bodyOf(r)) {
      // Atomic mode may run the handler before it reads the key (its pre-check is skipped
      // while keys are seldom found taken): the handler's own refusal is as right as 422.
      const handler = step({ ...structuredClone(m), keyRows: {} }, r, prices);
      return handler.ok
        ? refused('idempotency_key_reused')
        : { ...handler, or: 'idempotency_key_reused' };
    }
    return { ok: true, ref: row.ref };
  }
  // The handler's first checks: the capture method is the merchant's, a payment the tenant's.
  if (r.transport === 'shopper' && r.manual) return refused('operator_required');
  if (r.op !== 'pay' && m.payments[r.payment]?.tenant !== tenantOf(r)) {
    return refused('payment_not_found');
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
    m.keyRows[keyRowOf(r)] = { body: bodyOf(r), ref: bound.ref };
    return { ok: true, ref: bound.ref };
  }
  const outcome = r.op === 'pay' ? pay(m, r, prices) : moneyAction(m, r);
  if (!outcome.ok) return outcome;
  const ref = m.nextRef++;
  m.bindings[bindingKey] = { op: r.op, payment: r.payment, body: bodyOf(r), ref };
  m.keyRows[keyRowOf(r)] = { body: bodyOf(r), ref };
  return { ok: true, ref };
}

function pay(m: Model, r: ModelRequest, prices: Prices): Expected {
  m.payments[r.payment] = {
    tenant: tenantOf(r),
    key: r.key,
    placedBy: placerOf(m, r),
    amount: prices[tenantOf(r)] * (r.amount ?? 1),
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

/**
 * Whether a shopper's read of payment `index` finds it: the tenant's payment it placed, or one
 * whose checkout key it proves (`proof`: the key it sends the proof of).
 */
export function shopperMayRead(m: Model, index: number, shopper: number, proof?: string): boolean {
  const p = m.payments[index];
  if (p?.tenant !== 'a') return false;
  return p.placedBy === `shopper:${shopper}` || proof === p.key;
}

/** The key rows of a run expired (retention over): only the bindings the app keeps remain. */
export function keysExpired(m: Model): void {
  m.keyRows = {};
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

/**
 * What a request whose database session was cut may answer: 503 `idempotency_store_unavailable`
 * (nothing was recorded), or 409 `idempotency_outcome_unknown` (the commit may have happened).
 * Either way the client retries it under its key to learn its outcome.
 */
export const unsure = (a: Answer) =>
  !a.ok && (a.code === 'idempotency_store_unavailable' || a.code === 'idempotency_outcome_unknown');

/** The model after a batch of requests sent at once, if some order of them explains every answer. */
export function explainBatch(
  m: Model,
  requests: readonly ModelRequest[],
  answers: readonly Answer[],
  prices: Prices,
): Model | undefined {
  return explainBatchAll(m, requests, answers, prices)[0];
}

/**
 * Every model after the batch that some order explains; an outcome unknown branches (its
 * request took effect, or did not), so the retries that follow decide between them.
 */
export function explainBatchAll(
  m: Model,
  requests: readonly ModelRequest[],
  answers: readonly Answer[],
  prices: Prices,
): Model[] {
  const found: Model[] = [];
  for (const order of permutations(requests.length)) {
    let models = [structuredClone(m)];
    for (const i of order) {
      models = models.flatMap((c) => {
        const a = answers[i]!;
        if (!unsure(a)) return explains(c, requests, answers, i, prices) ? [c] : [];
        if (!a.ok && a.code === 'idempotency_store_unavailable') return [c];
        const applied = structuredClone(c);
        return step(applied, requests[i]!, prices).ok ? [c, applied] : [c];
      });
    }
    found.push(...models);
    // One model is the answer; with unsure answers, enough to go on (the retries prune them).
    if (found.length >= (answers.some(unsure) ? 8 : 1)) break;
  }
  return found;
}

function explains(
  m: Model,
  requests: readonly ModelRequest[],
  answers: readonly Answer[],
  i: number,
  prices: Prices,
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
      (o, j) => j !== i && sameKeyRow(o, r) && bodyOf(o) !== bodyOf(r),
    );
    if (sawAnother) return true;
  }
  const expected = step(m, r, prices);
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
