import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import {
  IdempotencyKeyManager,
  type IdempotencyKeyManagerOptions,
  type IntentStorageError,
  isLocked,
  type KeyValueStorage,
  type StoredIntent,
} from '../../client/idempotency-key-manager.ts';

/**
 * Options of {@link useIdempotencyKey}: the manager's, with an optional scope (nothing is
 * kept until it is known) and a way to hear other tabs.
 */
export interface UseIdempotencyKeyOptions<TIntent>
  extends Omit<IdempotencyKeyManagerOptions<TIntent>, 'storage' | 'scope'> {
  /** Whose intent this is; `undefined` until known (no manager then). */
  scope: string | undefined;
  /** Where intents live. Default `localStorage`, or page memory only where it is refused. */
  storage?: () => KeyValueStorage;
  /**
   * Called with the stored intent on mount and whenever another tab changed it (a `storage`
   * event): e.g. start following a result another tab was accepted with.
   */
  onExternalChange?: (intent: StoredIntent<TIntent> | undefined) => void;
}

/** What {@link useIdempotencyKey} gives a component. */
export interface IdempotencyKeyState<TIntent> {
  /** The framework-free manager for the scope; every send goes through it. */
  keys: IdempotencyKeyManager<TIntent> | undefined;
  /** The scope's intent as stored, as this tab last read it. */
  intent: StoredIntent<TIntent> | undefined;
  /**
   * The intent's outcome is unknown (or accepted and not cleared), or its stored record cannot
   * be read: nothing may change.
   */
  locked: boolean;
  /**
   * Why no key is handed out (show its `message`): `intent_unreadable` (a stored record that
   * cannot be read, until `reset`) or `intent_not_persisted` (storage refused the last write:
   * nothing was sent). As of the last `refresh`.
   */
  problem: IntentStorageError | undefined;
  /** Re-reads the stored intent after this tab changed it through `keys`. */
  refresh: () => void;
  /**
   * Explicitly throws away an unreadable stored record (`intent_unreadable`), e.g. behind a
   * "clear this checkout" button after the user or support confirmed; then re-reads.
   */
  reset: () => void;
}

/** Storage that refuses everything: the manager then keeps the intent in page memory. */
const unavailable = (): never => {
  throw new Error('storage unavailable');
};
const NO_STORAGE: KeyValueStorage = {
  getItem: unavailable,
  setItem: unavailable,
  removeItem: unavailable,
};

/** The slice of `window` the hook uses, without requiring the DOM library's types. */
interface StorageEventTarget {
  localStorage?: KeyValueStorage;
  addEventListener?(type: 'storage', listener: (event: { key: string | null }) => void): void;
  removeEventListener?(type: 'storage', listener: (event: { key: string | null }) => void): void;
}

const browser = () => globalThis as unknown as StorageEventTarget;

/** `localStorage`, which every tab of the origin shares; reading it may throw (privacy settings). */
function sharedStorage(): KeyValueStorage {
  try {
    return browser().localStorage ?? NO_STORAGE;
  } catch {
    return NO_STORAGE;
  }
}

/**
 * The hook's manager for a scope: every manager option given to the hook (`upgradeRecord`
 * included), the storage resolved. Internal.
 */
export function createKeyManager<TIntent>(
  options: UseIdempotencyKeyOptions<TIntent>,
  scope: string,
): IdempotencyKeyManager<TIntent> {
  const { storage, onExternalChange: _, scope: __, ...manager } = options;
  return new IdempotencyKeyManager<TIntent>({
    ...manager,
    storage: (storage ?? sharedStorage)(),
    scope,
  });
}

/**
 * One Idempotency-Key per intent in a React component: the {@link IdempotencyKeyManager} for
 * the scope, the stored intent as state, and other tabs' changes through `storage` events,
 * so a tab sees the intent another tab locked. Storage is read after mount only: the server
 * render cannot see it, and reading it during render would break hydration.
 *
 * The retry policy is {@link runRetryFlow}; each attempt goes through
 * {@link attemptForIntent}, which locks the intent before the request leaves.
 *
 * @example
 * const { keys, intent, locked, refresh } = useIdempotencyKey({ scope: tenantId, intents: cart });
 * const pay = async () => {
 *   const current = keys!.keyFor(cart);
 *   await runRetryFlow({ send: () => attemptForIntent(keys!, current.key, () => send(current), (r) => r.id), onState });
 *   refresh();
 * };
 */
export function useIdempotencyKey<TIntent>(
  options: UseIdempotencyKeyOptions<TIntent>,
): IdempotencyKeyState<TIntent> {
  const { scope, namespace } = options;
  // The functions in `options` are usually new on every render; the manager is made once per
  // scope (a new manager would forget the in-memory intent of a page without storage).
  const latest = useRef(options);
  latest.current = options;
  const keys = useMemo(
    () =>
      scope === undefined ? undefined : createKeyManager({ ...latest.current, namespace }, scope),
    [scope, namespace],
  );
  const [intent, setIntent] = useState<StoredIntent<TIntent> | undefined>();
  const [problem, setProblem] = useState<IntentStorageError | undefined>();

  const refresh = useCallback(() => {
    setIntent(keys?.current());
    setProblem(keys?.problem());
  }, [keys]);
  const reset = useCallback(() => {
    keys?.resetUnreadable();
    refresh();
  }, [keys, refresh]);

  useEffect(() => {
    if (!keys) {
      setIntent(undefined);
      setProblem(undefined);
      return;
    }
    const sync = () => {
      const stored = keys.current();
      setIntent(stored);
      setProblem(keys.problem());
      latest.current.onExternalChange?.(stored);
    };
    sync();
    const onStorage = (event: { key: string | null }) => {
      if (event.key === null || event.key === keys.storageKey) sync();
    };
    const target = browser();
    target.addEventListener?.('storage', onStorage);
    return () => target.removeEventListener?.('storage', onStorage);
  }, [keys]);

  const locked = isLocked(intent) || problem?.code === 'intent_unreadable';
  return { keys, intent, locked, problem, refresh, reset };
}
