'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { useTRPC } from '../../client/trpc-react.tsx';
import type { DemoMerchant } from '../checkout/tenant-picker.tsx';

/**
 * The cockpit's sign-in: an operator credential, never a shopper's session. With the
 * merchant's API key (any deployment), or in a demo by picking a merchant as its operator AND
 * giving the operator code `npm run demo` printed in its terminal (picking a merchant alone is
 * no credential: anyone who reaches the page could). Either way the server sets a signed,
 * HttpOnly session cookie with the operator role.
 */
export function OperatorSignIn({
  merchants,
  signedInAs,
}: {
  merchants: readonly DemoMerchant[];
  /** The shopper session this browser holds, if any: it cannot open the cockpit. */
  signedInAs?: { tenantName: string } | undefined;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const start = useMutation(
    trpc.session.start.mutationOptions({ onSuccess: () => queryClient.invalidateQueries() }),
  );
  const [apiKey, setApiKey] = useState('');
  const [operatorCode, setOperatorCode] = useState('');
  const apiKeyId = useId();
  const apiKeyHintId = useId();
  const operatorCodeId = useId();
  const operatorCodeHintId = useId();

  function submitApiKey(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (apiKey.trim()) start.mutate({ apiKey: apiKey.trim() });
  }

  return (
    <section className="card" aria-labelledby="operator-sign-in" data-testid="operator-sign-in">
      <h2 id="operator-sign-in">Operator sign-in</h2>
      {signedInAs ? (
        <p data-testid="operator-required">
          You are signed in as a shopper of <strong>{signedInAs.tenantName}</strong>. The cockpit
          shows every shopper's payments, so it needs an operator credential.
        </p>
      ) : (
        <p className="muted">The cockpit needs an operator credential of the merchant.</p>
      )}
      <form onSubmit={submitApiKey}>
        <label htmlFor={apiKeyId}>Merchant API key</label>
        <div className="row">
          <input
            id={apiKeyId}
            type="password"
            autoComplete="off"
            aria-describedby={apiKeyHintId}
            value={apiKey}
            onChange={(event) => setApiKey(event.target.value)}
          />
          <button type="submit" disabled={start.isPending || !apiKey.trim()}>
            Sign in with API key
          </button>
        </div>
        <p id={apiKeyHintId} className="small muted">
          The demo's keys are printed by <code>npm run demo</code>, new at each start. A key reads
          the cockpit and moves money; the chaos switches need the operator code.
        </p>
      </form>
      {merchants.length > 0 ? (
        <fieldset>
          <legend>Demo: sign in as the operator of</legend>
          <label htmlFor={operatorCodeId}>Operator code</label>
          <input
            id={operatorCodeId}
            data-testid="operator-code"
            type="password"
            autoComplete="off"
            spellCheck={false}
            aria-describedby={operatorCodeHintId}
            value={operatorCode}
            onChange={(event) => setOperatorCode(event.target.value)}
          />
          <p id={operatorCodeHintId} className="small muted">
            Printed by <code>npm run demo</code> in its terminal; a new one at each start.
          </p>
          <div className="row">
            {merchants.map((merchant) => (
              <button
                key={merchant.id}
                type="button"
                data-testid={`operator-${merchant.id}`}
                disabled={start.isPending || !operatorCode.trim()}
                onClick={() =>
                  start.mutate({
                    demoTenantId: merchant.id,
                    role: 'operator',
                    operatorCode: operatorCode.trim(),
                  })
                }
              >
                {merchant.name}
              </button>
            ))}
          </div>
        </fieldset>
      ) : null}
      {start.error ? (
        <p role="alert" className="error">
          Could not sign in: {start.error.message}
        </p>
      ) : null}
    </section>
  );
}

/**
 * Ends the operator's session on the server (any copy of its cookie stops working too), then
 * shows the sign-in again. A failure (the database away) says so and keeps the session: a
 * sign-out that did not happen never looks done.
 */
export function OperatorSignOut() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const end = useMutation(
    trpc.session.end.mutationOptions({ onSuccess: () => queryClient.resetQueries() }),
  );
  return (
    <>
      <button
        type="button"
        className="link"
        data-testid="operator-sign-out"
        disabled={end.isPending}
        onClick={() => end.mutate()}
      >
        Sign out
      </button>
      {end.error ? (
        <span role="alert" className="error">
          {' '}
          Could not sign out: {end.error.message}
        </span>
      ) : null}
    </>
  );
}
