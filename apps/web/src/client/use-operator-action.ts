'use client';

import { type KeyValueStorage, newIdempotencyKey } from '@once/idempotency/client';
import { useCallback, useEffect, useRef, useState } from 'react';
import { classifyPayError } from './classify-pay-error.ts';
import {
  claimIntent,
  forgetIntent,
  intentStorageKey,
  isFinal,
  type OperatorActionIntent,
  type OperatorActionKind,
  type OperatorActionState,
  readIntent,
  stateOfAnswer,
} from './operator-action-intent.ts';
import { useResponseHeaderRecorder } from './trpc-react.tsx';

/** One request of the action with its key; `attemptId` tags it for the header recorder. */
type SendOperatorAction<TInput, TResult> = (
  input: TInput,
  context: { idempotencyKey: string; attemptId: string },
) => Promise<TResult>;

/** The origin's localStorage, shared by every tab; undefined where storage is disabled. */
function sharedStorage(): KeyValueStorage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

/**
 * A money button that is itself idempotent: the first press mints ONE Idempotency-Key and keeps
 * it, with its input, in `localStorage` until the answer is final, so a second press, a retry, a
 * reload or another tab sends the same key and input, and the server acts once. A reload resends
 * an unfinished intent at once; a 409 is asked again after its Retry-After.
 */
export function useOperatorAction<TInput, TResult>(
  paymentId: string,
  kind: OperatorActionKind,
  send: SendOperatorAction<TInput, TResult>,
): {
  state: OperatorActionState<TResult>;
  /** Sends the intended action: the pending one if there is one, else `input` under a new key. */
  press: (input: TInput) => void;
} {
  const recorder = useResponseHeaderRecorder();
  const storageKey = intentStorageKey(paymentId, kind);
  const [state, setState] = useState<OperatorActionState<TResult>>({ phase: 'idle' });
  const intent = useRef<OperatorActionIntent<TInput> | undefined>(undefined);
  const sendRef = useRef(send);
  sendRef.current = send;
  /** The key of the last request sent, and of the last intent whose answer was final. */
  const latestKey = useRef<string | undefined>(undefined);
  const answeredKey = useRef<string | undefined>(undefined);
  const retryTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const sendIntent = useCallback(
    async (sending: OperatorActionIntent<TInput>) => {
      clearTimeout(retryTimer.current);
      latestKey.current = sending.key;
      if (answeredKey.current !== sending.key) setState({ phase: 'sending', key: sending.key });
      const attemptId = newIdempotencyKey();
      let next: OperatorActionState<TResult>;
      try {
        const result = await sendRef.current(sending.input, {
          idempotencyKey: sending.key,
          attemptId,
        });
        const replayed = recorder.take(attemptId)?.replayed === true;
        next = stateOfAnswer(sending.key, { kind: 'accepted', result, replayed });
      } catch (error) {
        next = stateOfAnswer(sending.key, classifyPayError(error, recorder.take(attemptId)));
      }
      // An answer to an older intent, or a second click's 409 after its key's final answer,
      // changes nothing shown.
      if (latestKey.current !== sending.key || answeredKey.current === sending.key) return;
      if (isFinal(next)) {
        answeredKey.current = sending.key;
        if (intent.current?.key === sending.key) intent.current = undefined;
        forgetIntent(sharedStorage(), storageKey, sending.key);
      }
      setState(next);
      if (next.phase === 'no_answer' && next.retryInSeconds !== undefined) {
        retryTimer.current = setTimeout(() => void sendIntent(sending), next.retryInSeconds * 1000);
      }
    },
    [recorder, storageKey],
  );

  // A reload mid-action: the stored intent is sent again with its key (replayed if it ran).
  useEffect(() => {
    const stored = readIntent<TInput>(sharedStorage(), storageKey);
    if (stored) {
      intent.current = stored;
      void sendIntent(stored);
    }
    return () => clearTimeout(retryTimer.current);
  }, [storageKey, sendIntent]);

  const press = useCallback(
    (input: TInput) => {
      // Read at the press, not only at mount: another tab may have stored the intent since.
      const storage = sharedStorage();
      intent.current =
        readIntent<TInput>(storage, storageKey) ??
        intent.current ??
        claimIntent(storage, storageKey, input, newIdempotencyKey);
      void sendIntent(intent.current);
    },
    [storageKey, sendIntent],
  );

  return { state, press };
}
