'use client';

import { type Dispatch, type SetStateAction, useEffect, useState } from 'react';

/**
 * `useState` kept in `sessionStorage`, so a reload mid-checkout keeps its cart (and key). Loaded
 * after mount: reading storage during render would break hydration; `loaded` tells when it is in.
 */
export function useSessionState<T>(
  storageKey: string,
  initial: T,
): [T, Dispatch<SetStateAction<T>>, boolean] {
  const [value, setValue] = useState<T>(initial);
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    try {
      const raw = window.sessionStorage.getItem(storageKey);
      if (raw !== null) setValue(JSON.parse(raw) as T);
    } catch {
      // Unreadable or disabled storage: start from the initial value.
    }
    setLoaded(true);
  }, [storageKey]);
  useEffect(() => {
    if (!loaded) return;
    try {
      window.sessionStorage.setItem(storageKey, JSON.stringify(value));
    } catch {
      // Storage full or disabled: the value lives on in memory.
    }
  }, [storageKey, value, loaded]);
  return [value, setValue, loaded];
}
