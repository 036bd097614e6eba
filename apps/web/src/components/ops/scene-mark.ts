'use client';

import { useCallback, useSyncExternalStore } from 'react';

/** One mark per merchant and browser: two cockpits of one presenter share the scene. */
const storageKey = (tenantId: string) => `once.cockpit.sceneStart.${tenantId}`;

/** Tabs learn of a mark set elsewhere through `storage`; this tab through its own event. */
const CHANGED = 'once-scene-mark';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('storage', onChange);
  window.addEventListener(CHANGED, onChange);
  return () => {
    window.removeEventListener('storage', onChange);
    window.removeEventListener(CHANGED, onChange);
  };
}

function read(tenantId: string): string | null {
  try {
    return window.localStorage.getItem(storageKey(tenantId));
  } catch {
    return null;
  }
}

/**
 * Where the demo's current scene started (this browser only; `null`: count everything): each
 * scene starts at "0 payments" without deleting anything.
 */
export function useSceneMark(
  tenantId: string,
): [since: string | null, setSince: (iso: string | null) => void] {
  const since = useSyncExternalStore(
    subscribe,
    () => read(tenantId),
    () => null,
  );
  const setSince = useCallback(
    (iso: string | null) => {
      try {
        if (iso) window.localStorage.setItem(storageKey(tenantId), iso);
        else window.localStorage.removeItem(storageKey(tenantId));
      } catch {
        // Storage refused (private mode, quota): the mark is simply not kept.
      }
      window.dispatchEvent(new Event(CHANGED));
    },
    [tenantId],
  );
  return [since, setSince];
}
