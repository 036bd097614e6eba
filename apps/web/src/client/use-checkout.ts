'use client';

import { useQuery } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { IdempotencyKeyManager } from './idempotency-key-manager.ts';
import { type PayFlowState, runPayFlow } from './pay-flow.ts';
import { type PayResult, sendPay } from './send-pay.ts';
import { useResponseHeaderRecorder, useTRPC, useTRPCClient } from './trpc-react.tsx';

export type CheckoutFlowState = PayFlowState<PayResult> | { phase: 'idle' };

/** The payment the page is watching, and how we got it. */
export interface WatchedPayment {
  paymentId: string;
  key: string;
  /** The server answered at least once from its stored response (a retry or double click). */
  replayed: boolean;
  /** Picked up from storage after a reload, not from this page's own request. */
  resumed: boolean;
}

export interface CheckoutCart {
  tenantId: string;
  lines: { productId: string; quantity: number }[];
  paymentMethod: string;
}

/** How often a processing payment is polled. */
const STATUS_POLL_MS = 1_000;

/**
 * The checkout's behaviour, separate from its looks: one Idempotency-Key per intent (from
 * the key manager), the pay flow with its retry policy, and watching the accepted payment
 * until it is terminal.
 *
 * The Pay button is disabled while `busy`, but nothing relies on that: every click asks the
 * key manager, which answers the same key for the same cart, so a click that gets through
 * sends the same key and the server answers with a conflict or a replay, never a second
 * payment.
 *
 * @example
 * const checkout = useCheckout(cart); <button onClick={checkout.pay} disabled={checkout.busy}>Pay</button>
 */
export function useCheckout(cart: CheckoutCart | undefined) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const recorder = useResponseHeaderRecorder();
  const keysRef = useRef<IdempotencyKeyManager | null>(null);
  const keys = useCallback(() => {
    keysRef.current ??= new IdempotencyKeyManager(window.sessionStorage);
    return keysRef.current;
  }, []);
  const abortRef = useRef(new AbortController());

  const [flow, setFlow] = useState<CheckoutFlowState>({ phase: 'idle' });
  const [running, setRunning] = useState(0);
  const [watched, setWatched] = useState<WatchedPayment | undefined>();
  const [activeKey, setActiveKey] = useState<string | undefined>();
  /** A stored intent without an accepted payment: a reload happened mid-request. */
  const [unfinishedKey, setUnfinishedKey] = useState<string | undefined>();

  useEffect(() => {
    const stored = keys().current();
    if (stored?.paymentId) {
      setWatched({ paymentId: stored.paymentId, key: stored.key, replayed: false, resumed: true });
      setActiveKey(stored.key);
    } else if (stored) {
      setUnfinishedKey(stored.key);
    }
  }, [keys]);

  const status = useQuery({
    ...trpc.checkout.status.queryOptions({ paymentId: watched?.paymentId ?? '' }),
    enabled: watched !== undefined,
    refetchInterval: (query) => (query.state.data?.terminal ? false : STATUS_POLL_MS),
    // While the web server is down, keep asking: the payment exists and will settle.
    retry: true,
    retryDelay: (attempt) => Math.min(1_000 * 2 ** attempt, 5_000),
  });

  const terminal = status.data?.terminal === true && status.data.paymentId === watched?.paymentId;
  useEffect(() => {
    // A finished payment ends the intent: the next purchase is a new one, with a new key.
    if (terminal && watched) keys().clear(watched.key);
  }, [terminal, watched, keys]);

  const pay = useCallback(async () => {
    if (!cart) return;
    const intent = keys().keyFor(cart);
    setActiveKey(intent.key);
    setUnfinishedKey(undefined);
    const signal = abortRef.current.signal;
    setRunning((n) => n + 1);
    try {
      const final = await runPayFlow<PayResult>({
        send: () =>
          sendPay({
            client,
            recorder,
            key: intent.key,
            input: { lines: cart.lines, paymentMethod: cart.paymentMethod },
          }),
        onState: setFlow,
        signal,
      });
      if (final.phase === 'accepted') {
        keys().recordPayment(intent.key, final.result.paymentId);
        setWatched((previous) => ({
          paymentId: final.result.paymentId,
          key: intent.key,
          // Two answers for one intent (double click): either replay means "not charged twice".
          replayed:
            final.replayed || (previous?.paymentId === final.result.paymentId && previous.replayed),
          resumed: false,
        }));
      }
    } finally {
      setRunning((n) => n - 1);
    }
  }, [cart, client, recorder, keys]);

  /** Leaves this intent behind: a fresh page for a new purchase (or after a 422). */
  const startOver = useCallback(
    (options: { newKeyForSameCart?: boolean } = {}) => {
      abortRef.current.abort();
      abortRef.current = new AbortController();
      if (options.newKeyForSameCart && cart) keys().renew(cart);
      else if (watched && terminal) keys().clear(watched.key);
      setFlow({ phase: 'idle' });
      setWatched(undefined);
      setActiveKey(undefined);
      setUnfinishedKey(undefined);
    },
    [cart, keys, watched, terminal],
  );

  // A shown result (even a terminal one) keeps the form locked until the user starts over:
  // Pay right after "succeeded" would otherwise be one click from a second purchase.
  const busy = running > 0 || watched !== undefined;
  return {
    pay,
    startOver,
    flow,
    watched,
    status,
    terminal,
    busy,
    requestInFlight: running > 0,
    activeKey,
    unfinishedKey,
  };
}

export type CheckoutController = ReturnType<typeof useCheckout>;
