import { type CheckoutIntentInput, cartHash } from './cart-hash.ts';
import { newIdempotencyKey } from './random-key.ts';

/** The slice of the Web Storage API the manager needs; `sessionStorage` satisfies it. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** One checkout intent as kept in storage. */
export interface StoredIntent {
  /** The Idempotency-Key every attempt of this intent sends. */
  key: string;
  cartHash: string;
  /** Set once the server accepted the payment, so a reload resumes watching it. */
  paymentId?: string;
  createdAt: string;
}

export const INTENT_STORAGE_KEY = 'once.checkout.intent';

/**
 * Keeps ONE Idempotency-Key per checkout intent (DESIGN, checkout step 1). The key lives in
 * `sessionStorage` beside a hash of the cart, so a reload, a retry or a double click sends
 * the same key; a changed cart is a new intent and gets a new key; a finished payment
 * clears it, so the next purchase is a new intent.
 *
 * Per tab on purpose: `sessionStorage` is per tab, and two tabs are two intents.
 *
 * @example
 * const keys = new IdempotencyKeyManager(sessionStorage);
 * const { key } = keys.keyFor({ tenantId, lines, paymentMethod });
 */
export class IdempotencyKeyManager {
  /**
   * Mirror of the stored intent. Used when storage is disabled or full, so a double click
   * on this page still sends one key even where a reload cannot keep it.
   */
  private memory: StoredIntent | undefined;
  private storageBroken = false;

  constructor(
    private readonly storage: KeyValueStorage,
    private readonly generate: () => string = newIdempotencyKey,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The intent currently stored, if any and readable. */
  current(): StoredIntent | undefined {
    if (this.storageBroken) return this.memory;
    let raw: string | null;
    try {
      raw = this.storage.getItem(INTENT_STORAGE_KEY);
    } catch {
      this.storageBroken = true;
      return this.memory;
    }
    if (raw === null) return undefined;
    try {
      const parsed = JSON.parse(raw) as Partial<StoredIntent>;
      if (typeof parsed.key !== 'string' || typeof parsed.cartHash !== 'string') return undefined;
      return {
        key: parsed.key,
        cartHash: parsed.cartHash,
        createdAt: typeof parsed.createdAt === 'string' ? parsed.createdAt : '',
        ...(typeof parsed.paymentId === 'string' ? { paymentId: parsed.paymentId } : {}),
      };
    } catch {
      return undefined;
    }
  }

  /**
   * The key for this cart: the stored one if the cart is unchanged, a new one (replacing
   * the stored intent) otherwise.
   */
  keyFor(intent: CheckoutIntentInput): StoredIntent {
    const hash = cartHash(intent);
    const stored = this.current();
    if (stored && stored.cartHash === hash) return stored;
    const fresh: StoredIntent = {
      key: this.generate(),
      cartHash: hash,
      createdAt: this.now().toISOString(),
    };
    this.write(fresh);
    return fresh;
  }

  /** Records the accepted payment on the intent that has `key` (ignored if it was replaced). */
  recordPayment(key: string, paymentId: string): void {
    const stored = this.current();
    if (!stored || stored.key !== key) return;
    this.write({ ...stored, paymentId });
  }

  /**
   * Forces a new key for the same cart: after the server refused the old key as reused
   * with a different request (422), the user chose to start a new payment.
   */
  renew(intent: CheckoutIntentInput): StoredIntent {
    this.clear();
    return this.keyFor(intent);
  }

  /** Ends the intent (its payment finished): the next purchase gets a new key. */
  clear(key?: string): void {
    if (key !== undefined && this.current()?.key !== key) return;
    this.memory = undefined;
    try {
      this.storage.removeItem(INTENT_STORAGE_KEY);
    } catch {
      // Storage disabled: only the memory copy existed.
    }
  }

  private write(intent: StoredIntent): void {
    this.memory = intent;
    try {
      this.storage.setItem(INTENT_STORAGE_KEY, JSON.stringify(intent));
    } catch {
      // Storage full or disabled (private mode): the key still protects this page's
      // retries in memory; only a reload would lose it.
      this.storageBroken = true;
    }
  }
}
