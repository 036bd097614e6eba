import type { AttemptOutcomeKind } from './attempt-outcome.ts';
import { newIdempotencyKey } from './random-key.ts';

/** The slice of the Web Storage API the manager needs; `localStorage` satisfies it. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Where one intent stands, as every tab of the origin sees it:
 * - `open`: no attempt can have run (none sent yet, or every answer proved nothing ran);
 *   the request may still change, which makes a new intent;
 * - `unconfirmed`: an attempt was sent and no definite answer came back (lost response,
 *   timeout, 5xx, 409 in use or outcome unknown). The effect may exist or may still be
 *   running: the intent is LOCKED; only an answer for the same key moves it on;
 * - `accepted`: the server accepted it; locked until the caller clears it (its result is
 *   final).
 */
export type IntentStatus = 'open' | 'unconfirmed' | 'accepted';

/** One intent as kept in storage. `TIntent` is what the intent asks for (a cart, a form). */
export interface StoredIntent<TIntent> {
  /** The Idempotency-Key every attempt of this intent sends, from any tab. */
  key: string;
  /** {@link IntentDescription.fingerprint} of `intent`: equal fingerprints, same intent. */
  fingerprint: string;
  /** What the intent asks for; a tab showing the locked intent shows this. */
  intent: TIntent;
  status: IntentStatus;
  /** Set once the server accepted it (e.g. the payment id), so any tab or a reload follows it. */
  resultId?: string;
  createdAt: string;
}

/** What the manager must know about the intents it keeps, beyond storing them as JSON. */
export interface IntentDescription<TIntent> {
  /**
   * Equal for two requests that must share one key (the same cart in another line order,
   * say), different otherwise. Synchronous on purpose: `crypto.subtle` exists only in
   * secure contexts.
   */
  fingerprint(intent: TIntent): string;
  /**
   * The intent read back from storage, or `undefined` if it is not one: storage is shared
   * by every tab and every version of the page, so what comes back is untrusted.
   */
  parse(value: unknown): TIntent | undefined;
}

/** Options of {@link IdempotencyKeyManager}. */
export interface IdempotencyKeyManagerOptions<TIntent> {
  storage: KeyValueStorage;
  /** Whose intent this is (a merchant, a form): one current intent per scope. */
  scope: string;
  intents: IntentDescription<TIntent>;
  /** Prefix of the storage key, see {@link intentStorageKey}. Default `idempotency.intent`. */
  namespace?: string;
  /** Mints a key. Default: a random UUID v4 ({@link newIdempotencyKey}). */
  generate?: () => string;
  now?: () => Date;
  /**
   * Rewrites a record an earlier version of your page stored in another shape into this one
   * (`{ key, fingerprint, intent, status, resultId?, createdAt }`) before it is read. Without
   * it such a record is unreadable: unless it says `open` (nothing sent), it blocks new keys
   * until {@link IdempotencyKeyManager.resetUnreadable}.
   */
  upgradeRecord?: (stored: Record<string, unknown>) => Record<string, unknown>;
}

const DEFAULT_NAMESPACE = 'idempotency.intent';

/**
 * Why the manager refuses to hand out a key:
 * - `intent_unreadable`: a record is stored for the scope that cannot be read (corrupt, or a
 *   shape neither `parse` nor `upgradeRecord` understands) and may be a sent, locked intent:
 *   a new key could charge twice. Cleared only by {@link IdempotencyKeyManager.resetUnreadable}.
 * - `intent_not_persisted`: storage refused the write (full, or disabled), so the lock would
 *   live in this page's memory only and a reload would not see it: nothing is sent.
 */
export type IntentStorageErrorCode = 'intent_unreadable' | 'intent_not_persisted';

const STORAGE_ERROR_MESSAGES: Record<IntentStorageErrorCode, string> = {
  intent_unreadable:
    "This request's saved state could not be read, so whether it was already sent is unknown. Nothing new is sent until it is cleared: contact support, or clear it explicitly if you know it was not sent.",
  intent_not_persisted:
    "This request's state could not be saved in the browser (storage full or disabled), so a reload could send it twice. Nothing was sent: free some browser storage or allow site data, then try again.",
};

/**
 * Thrown instead of handing out a key (see {@link IntentStorageErrorCode}); `message` is
 * written for the person at the page. {@link IdempotencyKeyManager.problem} reports it too.
 */
export class IntentStorageError extends Error {
  readonly code: IntentStorageErrorCode;
  constructor(code: IntentStorageErrorCode, options: { cause?: unknown } = {}) {
    super(STORAGE_ERROR_MESSAGES[code], { cause: options.cause });
    this.name = 'IntentStorageError';
    this.code = code;
  }
}

/** A stored record that cannot be read and may be locked (see `intent_unreadable`). */
const UNREADABLE = Symbol('unreadable');

/** The storage key of a scope's current intent (shared by all tabs of the origin). */
export function intentStorageKey(namespace: string, scope: string): string {
  return `${namespace}.${scope}`;
}

/** Whether nothing about the intent may change until the server answers for its key. */
export function isLocked(intent: StoredIntent<unknown> | undefined): boolean {
  return intent !== undefined && intent.status !== 'open';
}

/**
 * How an answer to one attempt moves the intent (the accepted case goes through
 * {@link IdempotencyKeyManager.recordAccepted}):
 * - `unconfirmed`: the attempt may have run (no answer, 5xx, 409);
 * - `definite`: the server settled the key's fate for this intent (422 reused: the key
 *   belongs to another request; a validation refusal: every attempt of this input is refused);
 * - `not_run`: this attempt provably did not run (503 store unavailable, 429, 401), which
 *   says nothing about an EARLIER attempt of the same key: the status before it stands.
 */
const ANSWER_EFFECT: Record<
  Exclude<AttemptOutcomeKind, 'accepted'>,
  'unconfirmed' | 'definite' | 'not_run'
> = {
  network: 'unconfirmed',
  server_error: 'unconfirmed',
  in_use: 'unconfirmed',
  outcome_unknown: 'unconfirmed',
  key_reused: 'definite',
  rejected: 'definite',
  store_unavailable: 'not_run',
  rate_limited: 'not_run',
  unauthenticated: 'not_run',
};

/**
 * Keeps ONE Idempotency-Key per intent of a scope, in storage that every tab of the origin
 * shares (`localStorage`, under {@link intentStorageKey}), so a reload, a retry, a double
 * click or a second tab on the same request sends the same key: one effect.
 *
 * The rule that closes the "second effect from the same page" path: once an attempt is
 * sent, the intent is `unconfirmed` until a definite answer, and while it is locked
 * {@link keyFor} answers the locked intent's key whatever it is asked about. A new key
 * exists only for an `open` intent whose request changed, after a finished intent
 * ({@link clear}), or after a 422 when the user starts anew ({@link startNewIntent}).
 * Nothing here ever mints a new key for a retry.
 *
 * Framework-free (the React hook `useIdempotencyKey` wraps it): tests run it in Node with a
 * Map-backed storage.
 *
 * @example
 * const keys = new IdempotencyKeyManager({ storage: localStorage, scope: tenantId, intents: cart });
 * const intent = keys.keyFor({ lines, paymentMethod });
 * const before = keys.beginAttempt(intent.key); // persisted before the request leaves
 * // ... send with intent.key, then keys.recordAnswer(intent.key, attempt.kind, before)
 */
export class IdempotencyKeyManager<TIntent> {
  /**
   * Mirror of the stored intent. Used when storage is disabled or full, so a double click
   * on this page still sends one key even where a reload or another tab cannot see it.
   */
  private memory: StoredIntent<TIntent> | undefined;
  private storageBroken = false;
  /** The last write was refused by storage (cleared by the next one that succeeds). */
  private notPersisted: IntentStorageError | undefined;
  private readonly storage: KeyValueStorage;
  private readonly intents: IntentDescription<TIntent>;
  private readonly generate: () => string;
  private readonly now: () => Date;
  private readonly upgradeRecord:
    | ((stored: Record<string, unknown>) => Record<string, unknown>)
    | undefined;
  /** Where this scope's intent lives in storage. */
  readonly storageKey: string;

  constructor(options: IdempotencyKeyManagerOptions<TIntent>) {
    this.storage = options.storage;
    this.intents = options.intents;
    this.generate = options.generate ?? newIdempotencyKey;
    this.now = options.now ?? (() => new Date());
    this.upgradeRecord = options.upgradeRecord;
    this.storageKey = intentStorageKey(options.namespace ?? DEFAULT_NAMESPACE, options.scope);
  }

  /** The intent currently stored, if any and readable. */
  current(): StoredIntent<TIntent> | undefined {
    const stored = this.read();
    return stored === UNREADABLE ? undefined : stored;
  }

  /**
   * Why no key would be handed out now, for the UI to show (its `message` is written for the
   * person at the page): a stored record that cannot be read, or a write storage refused.
   */
  problem(): IntentStorageError | undefined {
    if (this.read() === UNREADABLE) return new IntentStorageError('intent_unreadable');
    return this.notPersisted;
  }

  /**
   * Explicitly throws away a stored record that cannot be read (`intent_unreadable`): the
   * user (or support) decided that whatever it was, a new request may get a new key. Does
   * nothing to a readable intent.
   */
  resetUnreadable(): void {
    if (this.read() === UNREADABLE) this.remove();
  }

  /** The stored intent; throws `intent_unreadable` rather than acting as if there were none. */
  private readable(): StoredIntent<TIntent> | undefined {
    const stored = this.read();
    if (stored === UNREADABLE) throw new IntentStorageError('intent_unreadable');
    return stored;
  }

  private read(): StoredIntent<TIntent> | typeof UNREADABLE | undefined {
    if (this.storageBroken) return this.memory;
    let raw: string | null;
    try {
      raw = this.storage.getItem(this.storageKey);
    } catch {
      this.storageBroken = true;
      return this.memory;
    }
    if (raw === null) return undefined;
    return this.parseStored(raw);
  }

  /**
   * The intent to send now. A locked intent is returned as is, whatever `intent` asks for:
   * its outcome is unknown, so a different request must not get a key of its own. Otherwise
   * the stored key if the request is unchanged, a new one (replacing the stored intent) if not.
   * Throws {@link IntentStorageError} instead of a key while a stored record cannot be read,
   * or when a new key cannot be saved (no key that a reload would forget).
   */
  keyFor(intent: TIntent): StoredIntent<TIntent> {
    const stored = this.readable();
    if (stored && isLocked(stored)) return stored;
    const fingerprint = this.intents.fingerprint(intent);
    if (stored && stored.fingerprint === fingerprint) return stored;
    const fresh: StoredIntent<TIntent> = {
      key: this.generate(),
      fingerprint,
      // A copy: the caller may go on mutating its own object.
      intent: structuredClone(intent),
      status: 'open',
      createdAt: this.now().toISOString(),
    };
    this.write(fresh);
    return fresh;
  }

  /**
   * Marks the intent `unconfirmed` BEFORE a request leaves: if the tab dies or the answer
   * is lost, storage already says the effect may exist. Returns the status before, for
   * {@link recordAnswer}. Throws {@link IntentStorageError} (send nothing) when the lock cannot
   * be saved or the stored record cannot be read.
   */
  beginAttempt(key: string): IntentStatus | undefined {
    const stored = this.readable();
    if (!stored || stored.key !== key) return undefined;
    if (stored.status === 'open') this.write({ ...stored, status: 'unconfirmed' });
    return stored.status;
  }

  /** Moves the intent on after an answer that is not an acceptance. */
  recordAnswer(
    key: string,
    kind: Exclude<AttemptOutcomeKind, 'accepted'>,
    statusBefore: IntentStatus | undefined,
  ): void {
    const stored = this.current();
    if (!stored || stored.key !== key || stored.status === 'accepted') return;
    const effect = ANSWER_EFFECT[kind];
    const status: IntentStatus =
      effect === 'unconfirmed'
        ? 'unconfirmed'
        : effect === 'definite'
          ? 'open'
          : statusBefore === 'open'
            ? 'open'
            : 'unconfirmed';
    // Refused by storage: the stored status (locked, or open before a "nothing ran") stands.
    if (status !== stored.status) this.tryWrite({ ...stored, status });
  }

  /** Records the accepted result on the intent that has `key` (ignored if it was replaced). */
  recordAccepted(key: string, resultId: string): void {
    const stored = this.current();
    if (!stored || stored.key !== key) return;
    // Refused by storage: the intent stays stored as unconfirmed, locked: never a second key.
    this.tryWrite({ ...stored, status: 'accepted', resultId });
  }

  /**
   * Throws the current key away and starts a NEW intent (a new key) for the same request:
   * after the server refused the old key as reused with a different request (422), the
   * user chose to start anew. Refused (the locked intent is returned) while the intent is
   * locked. Never call it to retry: a retry must send the same key.
   */
  startNewIntent(intent: TIntent): StoredIntent<TIntent> {
    const stored = this.readable();
    if (stored && isLocked(stored)) return stored;
    this.remove();
    return this.keyFor(intent);
  }

  /**
   * Ends the intent with `key` once its result is final: the next request gets a new key.
   * Ignored for another key, and for an intent still unconfirmed (no answer yet).
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

  /**
   * Saves the intent or throws `intent_not_persisted`: storage full or disabled. The memory
   * copy changes only with a saved write, so nothing acts as locked that a reload would not see.
   */
  private write(intent: StoredIntent<TIntent>): void {
    try {
      this.storage.setItem(this.storageKey, JSON.stringify(intent));
    } catch (cause) {
      this.notPersisted = new IntentStorageError('intent_not_persisted', { cause });
      throw this.notPersisted;
    }
    this.notPersisted = undefined;
    this.memory = intent;
  }

  /** {@link write} after an answer: refused, the status stored before stands. */
  private tryWrite(intent: StoredIntent<TIntent>): void {
    try {
      this.write(intent);
    } catch {
      // Reported through `problem()`.
    }
  }

  /**
   * Reads a stored intent; a record with an unknown status is treated as LOCKED-unknown
   * (better a stuck form than a second effect). One without a key, a fingerprint or a
   * readable intent is absent if it says `open` (nothing was sent), UNREADABLE otherwise:
   * it may be a sent intent, and a new key for it could repeat the effect.
   */
  private parseStored(raw: string): StoredIntent<TIntent> | typeof UNREADABLE | undefined {
    let parsed: Partial<Record<keyof StoredIntent<TIntent>, unknown>>;
    try {
      parsed = JSON.parse(raw) as typeof parsed;
      if (typeof parsed !== 'object' || parsed === null) return UNREADABLE;
      if (this.upgradeRecord) {
        parsed = this.upgradeRecord(parsed as Record<string, unknown>) as typeof parsed;
        if (typeof parsed !== 'object' || parsed === null) return UNREADABLE;
      }
    } catch {
      return UNREADABLE;
    }
    const unreadable = () => (parsed.status === 'open' ? undefined : UNREADABLE);
    if (typeof parsed.key !== 'string' || typeof parsed.fingerprint !== 'string')
      return unreadable();
    const intent = this.intents.parse(parsed.intent);
    if (intent === undefined) return unreadable();
    return {
      key: parsed.key,
      fingerprint: parsed.fingerprint,
      intent,
      status: STATUSES.includes(parsed.status as IntentStatus)
        ? (parsed.status as IntentStatus)
        : 'unconfirmed',
      createdAt: typeof parsed.createdAt === 'string' ? parsed.createdAt : '',
      ...(typeof parsed.resultId === 'string' ? { resultId: parsed.resultId } : {}),
    };
  }
}

const STATUSES: readonly IntentStatus[] = ['open', 'unconfirmed', 'accepted'];
