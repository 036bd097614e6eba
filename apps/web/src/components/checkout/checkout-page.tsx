'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { TRPCClientError } from '@trpc/client';
import { useEffect, useMemo, useState } from 'react';
import { cartHash } from '../../client/cart-hash.ts';
import { errorWords } from '../../client/error-words.ts';
import { DEFAULT_TEST_CARD } from '../../client/test-cards.ts';
import { useTRPC } from '../../client/trpc-react.tsx';
import { type CheckoutCart, useCheckout } from '../../client/use-checkout.ts';
import { useSessionState } from '../../client/use-session-state.ts';
import { formatMoney } from '../format/money.ts';
import { CardSelector } from './card-selector.tsx';
import { CartEditor, type CartQuantities } from './cart-editor.tsx';
import { CheckoutStatePanel } from './checkout-state-panel.tsx';
import { type DemoMerchant, TenantPicker } from './tenant-picker.tsx';

function isUnauthenticated(error: unknown): boolean {
  return (
    error instanceof TRPCClientError &&
    (error.data as { httpStatus?: number } | undefined)?.httpStatus === 401
  );
}

/** A quiet placeholder the size of the content it stands for, so nothing jumps when it loads. */
function Placeholder({ label }: { label: string }) {
  return (
    <div className="placeholder" aria-busy="true">
      <p className="muted">{label}</p>
    </div>
  );
}

interface CheckoutProps {
  merchants: readonly DemoMerchant[];
  /**
   * The 3-D Secure return page: the shopper is back from the bank. The checkout intent, its
   * key and its payment come back from storage as after any reload; only the words change.
   */
  returnedFromBank?: boolean;
}

/**
 * The checkout: merchant, cart, test card, Pay, and the honest state of the payment.
 * Rendered only after mount, so no click can land on server-rendered markup before React
 * is listening.
 */
export function CheckoutPage(props: CheckoutProps) {
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  if (!mounted) return <Placeholder label="Loading checkout…" />;
  return <Checkout {...props} />;
}

function Checkout({ merchants, returnedFromBank = false }: CheckoutProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const session = useQuery({ ...trpc.session.current.queryOptions(), retry: false });
  // `session.current` answers null when signed out (no 401 on a first visit).
  const signedIn = session.data != null;
  const catalogue = useQuery({ ...trpc.catalogue.list.queryOptions(), enabled: signedIn });
  const endSession = useMutation(
    trpc.session.end.mutationOptions({ onSuccess: () => queryClient.resetQueries() }),
  );
  // "Switch merchant" on a checkout that pays with the cockpit's operator session (no shopper
  // session of its own in this browser) shows the picker without ending that session: it is
  // the cockpit's, and the shopper's sign-in gets a cookie of its own.
  const [picking, setPicking] = useState(false);

  const [quantities, setQuantities, cartLoaded] = useSessionState<CartQuantities>(
    'once.checkout.cart',
    {},
  );
  const [paymentMethod, setPaymentMethod] = useSessionState(
    'once.checkout.card',
    DEFAULT_TEST_CARD.paymentMethod,
  );

  const cart = useMemo<CheckoutCart | undefined>(() => {
    if (!session.data || !catalogue.data) return undefined;
    const known = new Set(catalogue.data.map((p) => p.productId));
    const lines = Object.entries(quantities)
      .filter(([productId, quantity]) => quantity > 0 && known.has(productId))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([productId, quantity]) => ({ productId, quantity }));
    return { tenantId: session.data.tenantId, lines, paymentMethod };
  }, [session.data, catalogue.data, quantities, paymentMethod]);

  const checkout = useCheckout(cart);

  // A locked intent (sent, outcome unknown; or another tab's) is what this tab shows: the
  // cart on screen is always the cart the key pays for.
  const lockedCart = checkout.lockedCart;
  const lockedHash = lockedCart ? cartHash(lockedCart) : undefined;
  useEffect(() => {
    if (!lockedCart || !cartLoaded) return;
    if (cart && cartHash(cart) === lockedHash) return;
    const next: CartQuantities = {};
    for (const line of lockedCart.lines) {
      next[line.productId] = (next[line.productId] ?? 0) + line.quantity;
    }
    setQuantities(next);
    setPaymentMethod(lockedCart.paymentMethod);
  }, [lockedHash, lockedCart, cart, cartLoaded, setQuantities, setPaymentMethod]);

  if (session.isPending) return <Placeholder label="Checking your session…" />;
  if (session.error && !isUnauthenticated(session.error)) {
    return (
      <p role="alert" className="error" data-testid="session-error">
        {errorWords(session.error)}{' '}
        <button type="button" onClick={() => void session.refetch()}>
          Try again
        </button>
      </p>
    );
  }
  if (!session.data || picking) {
    return <TenantPicker merchants={merchants} onSignedIn={() => setPicking(false)} />;
  }

  const locked = checkout.busy;
  const canPay = cart !== undefined && cart.lines.length > 0 && cartLoaded;
  const total = catalogue.data
    ? catalogue.data.reduce((sum, p) => sum + p.unitAmount * (quantities[p.productId] ?? 0), 0)
    : 0;
  const currency = catalogue.data?.[0]?.currency ?? 'usd';
  return (
    <div className="checkout">
      <div className="checkout-form">
        <div className="merchant-bar">
          <span className="muted">Paying</span>{' '}
          <strong data-testid="merchant-name">{session.data.tenantName}</strong>
          <button
            type="button"
            className="link"
            disabled={locked && !checkout.terminal}
            onClick={() => {
              checkout.startOver();
              setQuantities({});
              if (session.data?.role === 'shopper') endSession.mutate();
              else setPicking(true);
            }}
          >
            Switch merchant
          </button>
        </div>
        {catalogue.data ? (
          <CartEditor
            products={catalogue.data}
            quantities={quantities}
            onChange={setQuantities}
            locked={locked}
          />
        ) : (
          <Placeholder
            label={
              catalogue.error
                ? `Catalogue unavailable. ${errorWords(catalogue.error)}`
                : 'Loading catalogue…'
            }
          />
        )}
        <CardSelector paymentMethod={paymentMethod} onChange={setPaymentMethod} locked={locked} />
      </div>
      <aside className="payment" aria-labelledby="payment-heading">
        <div className="payment-summary">
          <h2 id="payment-heading" className="eyebrow">
            Payment
          </h2>
          <p className="payment-total">
            <span className="muted">Total</span>{' '}
            <strong data-testid="cart-total">{formatMoney(total, currency)}</strong>
          </p>
          <button
            type="button"
            className="primary pay-button"
            data-testid="pay"
            disabled={!canPay || checkout.busy}
            onClick={() => void checkout.pay()}
          >
            {checkout.requestInFlight ? 'Paying…' : `Pay ${formatMoney(total, currency)}`}
          </button>
        </div>
        {checkout.intentProblem ? (
          // No key can be handed out, so nothing is sent: say why, and offer the one way on
          // for a record that cannot be read (the shopper confirms it was not paid).
          <div role="alert" className="error" data-testid="intent-problem">
            <p>{checkout.intentProblem.message}</p>
            {checkout.intentProblem.code === 'intent_unreadable' ? (
              <button type="button" onClick={() => checkout.resetIntent()}>
                Clear this checkout
              </button>
            ) : null}
          </div>
        ) : null}
        <CheckoutStatePanel checkout={checkout} returnedFromBank={returnedFromBank} />
      </aside>
    </div>
  );
}
