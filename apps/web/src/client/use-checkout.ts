'use client';

import { checkoutKeyProof } from '@once/api/checkout-key-proof';
import { exponentialDelayMs } from '@once/backoff';
import {
  attemptForIntent,
  IntentStorageError,
  type RetryFlowState,
  runRetryFlow,
} from '@once/idempotency/client';
import { useIdempotencyKey } from '@once/idempotency/react';
import { useQuery } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import type { CheckoutIntentInput } from './cart-hash.ts';
import {
  CHECKOUT_INTENT_NAMESPACE,
  checkoutIntents,
  upgradeCheckoutRecord,
} from './checkout-intent.ts';
import { type PayResult, sendPay } from './send-pay.ts';
import { useResponseHeaderRecorder, useTRPC, useTRPCClient } from './trpc-react.tsx';

export type CheckoutFlowState = RetryFlowState<PayResult> | { phase: 'idle' };

/** The payment the page is watching, and how we got it. */
export interface WatchedPayment {
  paymentId: string;
  key: string;
  /** The server answered at least once from its stored response (a retry or double click). */
  replayed: boolean;
  /** Picked up from the shared intent (a reload, or another tab paid), not this page's request. */
  resumed: boolean;
}

export type CheckoutCart = CheckoutIntentInput & {
  lines: { productId: string; quantity: number }[];
};

/** How often a processing payment is polled. */
const STATUS_POLL_MS = 1_000;

/**
 * Where this tab keeps the payment it shows: a finished payment ends the shared intent, so a
 * reloaded tab would otherwise show the paid cart as "nothing sent yet", one click from paying.
 */
const shownPaymentKey = (tenantId: string) => `once.checkout.shown.${tenantId}`;

function readShownPayment(tenantId: string): WatchedPayment | undefined {
  try {
    const raw = window.sessionStorage.getItem(shownPaymentKey(tenantId));
    const value = raw === null ? undefined : (JSON.parse(raw) as Partial<WatchedPayment>);
    if (typeof value?.paymentId !== 'string' || typeof value.key !== 'string') return undefined;
    return {
      paymentId: value.paymentId,
      key: value.key,
      replayed: value.replayed === true,
      resumed: true,
    };
  } catch {
    return undefined;
  }
}

function keepShownPayment(tenantId: string, watched: WatchedPayment | undefined): void {
  try {
    if (watched) window.sessionStorage.setItem(shownPaymentKey(tenantId), JSON.stringify(watched));
    else window.sessionStorage.removeItem(shownPaymentKey(tenantId));
  } catch {
    // Storage refused: the tab forgets on reload, as before.
  }
}

/**
 * The checkout's behaviour: one Idempotency-Key per intent (the key manager, shared by every tab
 * of the origin), its retry policy, and watching the accepted payment until it is terminal.
 * From the moment a request leaves until a definite answer the intent is `unconfirmed` in shared
 * storage, so every tab is `locked` to its cart and key. Nothing relies on Pay being disabled:
 * the key manager answers the same key for the same (or a locked) intent, so a stray click gets
 * a conflict or a replay, never a second payment.
 */
export function useCheckout(cart: CheckoutCart | undefined) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const recorder = useResponseHeaderRecorder();
  const tenantId = cart?.tenantId;
  const abortRef = useRef(new AbortController());

  const [flow, setFlow] = useState<CheckoutFlowState>({ phase: 'idle' });
  const [running, setRunning] = useState(0);
  const [watched, setWatched] = useState<WatchedPayment | undefined>();
  const {
    keys,
    intent,
    locked,
    problem: intentProblem,
    refresh: refreshIntent,
    reset: resetIntent,
  } = useIdempotencyKey({
    scope: tenantId,
    intents: checkoutIntents,
    namespace: CHECKOUT_INTENT_NAMESPACE,
    upgradeRecord: upgradeCheckoutRecord,
    // A payment another tab (or this page before a reload) recorded: watch it too.
    onExternalChange: (stored) => {
      const paymentId = stored?.resultId;
      if (!stored || !paymentId) return;
      setWatched((previous) =>
        previous?.paymentId === paymentId
          ? previous
          : { paymentId, key: stored.key, replayed: false, resumed: true },
      );
    },
  });

  // The watched payment's key, proven: a renewed session did not place the payment but holds
  // its key. Null without Web Crypto (plain http from another host): the session alone asks.
  const [proof, setProof] = useState<{ key: string; proof: string | null } | undefined>();
  useEffect(() => {
    const key = watched?.key;
    if (!key) return;
    let current = true;
    checkoutKeyProof(key).then(
      (value) => current && setProof({ key, proof: value }),
      () => current && setProof({ key, proof: null }),
    );
    return () => {
      current = false;
    };
  }, [watched?.key]);
  const watchedProof = proof && proof.key === watched?.key ? proof : undefined;

  // The payment this tab showed before a reload comes back; from then on the tab keeps it.
  const restored = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!tenantId || restored.current === tenantId) return;
    restored.current = tenantId;
    const shown = readShownPayment(tenantId);
    if (shown) setWatched((previous) => previous ?? shown);
  }, [tenantId]);
  useEffect(() => {
    if (tenantId && restored.current === tenantId) keepShownPayment(tenantId, watched);
  }, [tenantId, watched]);

  const status = useQuery({
    ...trpc.checkout.status.queryOptions({
      paymentId: watched?.paymentId ?? '',
      ...(watchedProof?.proof ? { checkoutKeyProof: watchedProof.proof } : {}),
    }),
    enabled: watched !== undefined && watchedProof !== undefined,
    refetchInterval: (query) => (query.state.data?.terminal ? false : STATUS_POLL_MS),
    // While the web server is down, keep asking: the payment exists and will settle.
    retry: true,
    retryDelay: (attempt) => exponentialDelayMs(attempt + 1, { baseMs: 1_000, maxMs: 5_000 }),
  });

  const terminal = status.data?.terminal === true && status.data.paymentId === watched?.paymentId;
  useEffect(() => {
    // A finished payment ends the intent: the next purchase is a new one, with a new key.
    if (terminal && watched && keys) {
      keys.clear(watched.key);
      refreshIntent();
    }
  }, [terminal, watched, keys, refreshIntent]);

  const pay = useCallback(async () => {
    if (!cart || !keys) return;
    // A locked intent answers its own key and cart, whatever this tab's cart says.
    let current: ReturnType<typeof keys.keyFor>;
    try {
      current = keys.keyFor(cart);
    } catch (error) {
      // Unreadable stored intent, or storage refused to save the key: nothing is sent, and
      // `intentProblem` says why.
      if (!(error instanceof IntentStorageError)) throw error;
      refreshIntent();
      return;
    }
    refreshIntent();
    const signal = abortRef.current.signal;
    setRunning((n) => n + 1);
    try {
      const final = await runRetryFlow<PayResult>({
        send: async () => {
          const attempt = await attemptForIntent(
            keys,
            current.key,
            () => {
              refreshIntent(); // now unconfirmed: locked in every tab
              return sendPay({
                client,
                recorder,
                key: current.key,
                input: {
                  lines: current.intent.lines.map((line) => ({ ...line })),
                  paymentMethod: current.intent.paymentMethod,
                },
              });
            },
            (result) => result.paymentId,
          );
          refreshIntent();
          return attempt;
        },
        onState: setFlow,
        signal,
      });
      if (final.phase === 'accepted') {
        setWatched((previous) => ({
          paymentId: final.result.paymentId,
          key: current.key,
          // Two answers for one intent (double click): either replay means "not charged twice".
          replayed:
            final.replayed || (previous?.paymentId === final.result.paymentId && previous.replayed),
          resumed: false,
        }));
      }
    } catch (error) {
      // The lock could not be saved before the request left: it was not sent.
      if (!(error instanceof IntentStorageError)) throw error;
      setFlow({ phase: 'idle' });
      refreshIntent();
    } finally {
      setRunning((n) => n - 1);
    }
  }, [cart, client, recorder, keys, refreshIntent]);

  /** A fresh page, or (after a 422) a new key for the same cart; never for an unknown outcome. */
  const startOver = useCallback(
    (options: { newKeyForSameCart?: boolean } = {}) => {
      abortRef.current.abort();
      abortRef.current = new AbortController();
      if (keys) {
        try {
          if (options.newKeyForSameCart && cart) keys.startNewIntent(cart);
          else if (watched && terminal) keys.clear(watched.key);
        } catch (error) {
          // No new key while the stored intent is unreadable or cannot be saved: `intentProblem`.
          if (!(error instanceof IntentStorageError)) throw error;
        }
        refreshIntent();
      }
      setFlow({ phase: 'idle' });
      setWatched(undefined);
    },
    [cart, keys, watched, terminal, refreshIntent],
  );

  // A shown result (even a terminal one) keeps the form locked until the user starts over:
  // Pay right after "succeeded" would otherwise be one click from a second purchase.
  const busy = running > 0 || watched !== undefined || locked;
  return {
    pay,
    startOver,
    flow,
    watched,
    status,
    terminal,
    busy,
    locked,
    /** Why no payment can be sent: unreadable (until `resetIntent`) or unsaveable storage. */
    intentProblem,
    resetIntent,
    /** The locked intent's cart: what the page must show while it is locked. */
    lockedCart: locked ? intent?.intent : undefined,
    /** Sent, with no definite answer yet, and no payment known: "outcome unknown". */
    unconfirmed: intent?.status === 'unconfirmed' && watched === undefined,
    requestInFlight: running > 0,
    activeKey: watched?.key ?? intent?.key,
  };
}

export type CheckoutController = ReturnType<typeof useCheckout>;
