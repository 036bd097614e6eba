'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { TRPCClientError } from '@trpc/client';
import { useEffect, useMemo, useState } from 'react';
import { DEFAULT_TEST_CARD } from '../../client/test-cards.ts';
import { useTRPC } from '../../client/trpc-react.tsx';
import { type CheckoutCart, useCheckout } from '../../client/use-checkout.ts';
import { useSessionState } from '../../client/use-session-state.ts';
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

/**
 * The checkout: merchant, cart, test card, Pay, and the honest state of the payment.
 * Rendered only after mount, so no click can land on server-rendered markup before React
 * is listening.
 */
export function CheckoutPage({ merchants }: { merchants: readonly DemoMerchant[] }) {
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  if (!mounted) return <p className="muted">Loading checkout…</p>;
  return <Checkout merchants={merchants} />;
}

function Checkout({ merchants }: { merchants: readonly DemoMerchant[] }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const session = useQuery({ ...trpc.session.current.queryOptions(), retry: false });
  const signedIn = session.data !== undefined;
  const catalogue = useQuery({ ...trpc.catalogue.list.queryOptions(), enabled: signedIn });
  const endSession = useMutation(
    trpc.session.end.mutationOptions({ onSuccess: () => queryClient.resetQueries() }),
  );

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

  if (session.isPending) return <p className="muted">Checking your session…</p>;
  if (session.error && !isUnauthenticated(session.error)) {
    return (
      <p role="alert" className="error" data-testid="session-error">
        Could not reach the server: {session.error.message}{' '}
        <button type="button" onClick={() => void session.refetch()}>
          Try again
        </button>
      </p>
    );
  }
  if (!session.data) return <TenantPicker merchants={merchants} />;

  const locked = checkout.busy;
  const canPay = cart !== undefined && cart.lines.length > 0 && cartLoaded;
  return (
    <div className="checkout">
      <p className="muted">
        Signed in as <strong data-testid="merchant-name">{session.data.tenantName}</strong>{' '}
        <button
          type="button"
          className="link"
          disabled={locked && !checkout.terminal}
          onClick={() => {
            checkout.startOver();
            setQuantities({});
            endSession.mutate();
          }}
        >
          Switch merchant
        </button>
      </p>
      {catalogue.data ? (
        <CartEditor
          products={catalogue.data}
          quantities={quantities}
          onChange={setQuantities}
          locked={locked}
        />
      ) : (
        <p className="muted">
          {catalogue.error
            ? `Catalogue unavailable: ${catalogue.error.message}`
            : 'Loading catalogue…'}
        </p>
      )}
      <CardSelector paymentMethod={paymentMethod} onChange={setPaymentMethod} locked={locked} />
      {checkout.unfinishedKey ? (
        <p className="card state state-warn" data-testid="unfinished-intent">
          This tab has an unfinished checkout. Paying again for the same cart reuses its key{' '}
          <code>{checkout.unfinishedKey}</code>, so it cannot be charged twice.
        </p>
      ) : null}
      <div className="row">
        <button
          type="button"
          className="primary"
          data-testid="pay"
          disabled={!canPay || checkout.busy}
          onClick={() => void checkout.pay()}
        >
          {checkout.requestInFlight ? 'Paying…' : 'Pay'}
        </button>
      </div>
      <CheckoutStatePanel checkout={checkout} />
    </div>
  );
}
