import { type CheckoutIntentInput, cartHash } from './cart-hash.ts';
import type { PayAttemptKind } from './pay-outcome.ts';
import { newIdempotencyKey } from './random-key.ts';

/** The slice of the Web Storage API the manager needs; `localStorage` satisfies it. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Where one checkout intent stands, as every tab of the origin sees it:
 * - `open`: no attempt can have run (none sent yet, or every answer proved nothing ran);
 *   the cart may still change, which makes a new intent;
 * - `unconfirmed`: an attempt was sent and no definite answer came back (lost response,
 *   timeout, 5xx, 409 in use or outcome unknown). The payment may exist or may still be
 *   running: the intent is LOCKED; only an answer for the same key moves it on;
 * - `accepted`: the server answered with the payment; locked until it is terminal.
 */
export type IntentStatus = 'open' | 'unconfirmed' | 'accepted';

/** One checkout intent as kept in storage. */
export interface StoredIntent {
  /** The Idempotency-Key every attempt of this intent sends, from any tab. */
  key: string;
  cartHash: string;
  /** What the intent pays for; a tab showing the locked intent shows this cart. */
  cart: CheckoutIntentInput;
  status: IntentStatus;
  /** Set once the server accepted the payment, so any tab (or a reload) watches it. */
  paymentId?: string;
  createdAt: string;
}

/** The storage key of a merchant's current intent (shared by all tabs of the origin). */
export function intentStorageKey(tenantId: string): string {
  return `once.checkout.intent.${tenantId}`;
}

/** Whether nothing about the intent may change until the server answers for its key. */
export function isLocked(intent: StoredIntent | undefined): boolean {
  return intent !== undefined && intent.status !== 'open';
}

/**
 * How an answer to one attempt moves the intent (the accepted case goes through
 * {@link IdempotencyKeyManager.recordPayment}):
 * - `unconfirmed`: the attempt may have run (no answer, 5xx, 409);
 * - `definite`: the server settled the key's fate for this intent (422 reused: the key
 *   belongs to another request; a validation refusal: every attempt of this input is refused);
 * - `not_run`: this attempt provably did not run (503 store unavailable, 429, 401), which
 *   says nothing about an EARLIER attempt of the same key: the status before it stands.
 */
export function answerEffect(
  kind: Exclude<PayAttemptKind, 'accepted'>,
): 'unconfirmed' | 'definite' | 'not_run' {
  switch (kind) {
    case 'network':
    case 'server_error':
    case 'in_use':
    case 'outcome_unknown':
      return 'unconfirmed';
    case 'key_reused':
    case 'rejected':
      return 'definite';
    case 'store_unavailable':
    case 'rate_limited':
    case 'unauthenticated':
      return 'not_run';
  }
}

/**
 * Keeps ONE Idempotency-Key per checkout intent of a merchant, in storage that every tab
 * of the origin shares (`localStorage`, under {@link intentStorageKey}), so a reload, a
 * retry, a double click or a second tab on the same cart sends the same key: one payment.
 *
 * The rule that closes the "second payment from the checkout page" path: once an attempt
 * is sent, the intent is `unconfirmed` until a definite answer, and while it is locked
 * {@link keyFor} answers the locked intent's key whatever cart it is asked about. A new
 * key exists only for an `open` intent whose cart changed, after a finished payment
 * ({@link clear}), or after a 422 when the user starts a new payment ({@link startNewIntent}).
 *
 * Tabs learn about each other's changes through `storage` events (see `use-checkout.ts`).
 *
 * @example
 * const keys = new IdempotencyKeyManager(localStorage, tenantId);
 * const intent = keys.keyFor({ tenantId, lines, paymentMethod });
 * const before = keys.beginAttempt(intent.key); // persisted before the request leaves
 * // ... send with intent.key, then keys.recordAnswer(intent.key, attempt.kind, before)
 */
export class IdempotencyKeyManager {
  /**
   * Mirror of the stored intent. Used when storage is disabled or full, so a double click
   * on this page still sends one key even where a reload or another tab cannot see it.
   */
  private memory: StoredIntent | undefined;
  private storageBroken = false;
  private readonly storageKey: string;

  constructor(
    private readonly storage: KeyValueStorage,
    tenantId: string,
    private readonly generate: () => string = newIdempotencyKey,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.storageKey = intentStorageKey(tenantId);
  }

  /** The intent currently stored, if any and readable. */
  current(): StoredIntent | undefined {
    if (this.storageBroken) return this.memory;
    let raw: string | null;
    try {
      raw = this.storage.getItem(this.storageKey);
    } catch {
      this.storageBroken = true;
      return this.memory;
    }
    if (raw === null) return undefined;
    return parseIntent(raw);
  }

  /**
   * The intent to pay now. A locked intent is returned as is, whatever `intent` asks for:
   * its outcome is unknown, so a different cart must not get a key of its own. Otherwise
   * the stored key if the cart is unchanged, a new one (replacing the stored intent) if not.
   */
  keyFor(intent: CheckoutIntentInput): StoredIntent {
    const stored = this.current();
    if (stored && isLocked(stored)) return stored;
    const hash = cartHash(intent);
    if (stored && stored.cartHash === hash) return stored;
    const fresh: StoredIntent = {
      key: this.generate(),
      cartHash: hash,
      cart: {
        tenantId: intent.tenantId,
        lines: [...intent.lines],
        paymentMethod: intent.paymentMethod,
      },
      status: 'open',
      createdAt: this.now().toISOString(),
    };
    this.write(fresh);
    return fresh;
  }

  /**
   * Marks the intent `unconfirmed` BEFORE a request leaves: if the tab dies or the answer
   * is lost, storage already says the payment may exist. Returns the status before, for
   * {@link recordAnswer}.
   */
  beginAttempt(key: string): IntentStatus | undefined {
    const stored = this.current();
    if (!stored || stored.key !== key) return undefined;
    if (stored.status === 'open') this.write({ ...stored, status: 'unconfirmed' });
    return stored.status;
  }

  /** Moves the intent on after an answer that is not an accepted payment. */
  recordAnswer(
    key: string,
    kind: Exclude<PayAttemptKind, 'accepted'>,
    statusBefore: IntentStatus | undefined,
  ): void {
    const stored = this.current();
    if (!stored || stored.key !== key || stored.status === 'accepted') return;
    const effect = answerEffect(kind);
    const status: IntentStatus =
      effect === 'unconfirmed'
        ? 'unconfirmed'
        : effect === 'definite'
          ? 'open'
          : statusBefore === 'open'
            ? 'open'
            : 'unconfirmed';
    if (status !== stored.status) this.write({ ...stored, status });
  }

  /** Records the accepted payment on the intent that has `key` (ignored if it was replaced). */
  recordPayment(key: string, paymentId: string): void {
    const stored = this.current();
    if (!stored || stored.key !== key) return;
    this.write({ ...stored, status: 'accepted', paymentId });
  }

  /**
   * Throws the current key away and starts a NEW intent (a new key) for the same cart:
   * after the server refused the old key as reused with a different request (422), the
   * user chose to start a new payment. Refused (the locked intent is returned) while the
   * intent is locked. Never call it to retry: a retry must send the same key.
   */
  startNewIntent(intent: CheckoutIntentInput): StoredIntent {
    const stored = this.current();
    if (stored && isLocked(stored)) return stored;
    this.remove();
    return this.keyFor(intent);
  }

  /**
   * Ends the intent with `key` once its payment is terminal: the next purchase gets a new
   * key. Ignored for another key, and for an intent still unconfirmed (no answer yet).
   */
  clear(key: string): void {
    const stored = this.current();
    if (!stored || stored.key !== key || stored.status === 'unconfirmed') return;
    this.remove();
  }

  private remove(): void {
    this.memory = undefined;
    try {
      this.storage.removeItem(this.storageKey);
    } catch {
      // Storage disabled: only the memory copy existed.
    }
  }

  private write(intent: StoredIntent): void {
    this.memory = intent;
    try {
      this.storage.setItem(this.storageKey, JSON.stringify(intent));
    } catch {
      // Storage full or disabled (private mode): the key still protects this page's
      // retries in memory; only a reload or another tab would not see it.
      this.storageBroken = true;
    }
  }
}

const STATUSES: readonly IntentStatus[] = ['open', 'unconfirmed', 'accepted'];

/**
 * Reads a stored intent; an unreadable record is treated as LOCKED-unknown only if it
 * still names a key (better a stuck form than a second payment), else as absent.
 */
function parseIntent(raw: string): StoredIntent | undefined {
  let parsed: Partial<StoredIntent>;
  try {
    parsed = JSON.parse(raw) as Partial<StoredIntent>;
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  if (typeof parsed.key !== 'string' || typeof parsed.cartHash !== 'string') return undefined;
  const cart = parsed.cart;
  if (
    typeof cart !== 'object' ||
    cart === null ||
    typeof cart.tenantId !== 'string' ||
    typeof cart.paymentMethod !== 'string' ||
    !Array.isArray(cart.lines)
  ) {
    return undefined;
  }
  return {
    key: parsed.key,
    cartHash: parsed.cartHash,
    cart,
    status: STATUSES.includes(parsed.status as IntentStatus)
      ? (parsed.status as IntentStatus)
      : 'unconfirmed',
    createdAt: typeof parsed.createdAt === 'string' ? parsed.createdAt : '',
    ...(typeof parsed.paymentId === 'string' ? { paymentId: parsed.paymentId } : {}),
  };
}
