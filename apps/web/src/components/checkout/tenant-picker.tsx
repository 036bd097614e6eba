'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { errorWords } from '../../client/error-words.ts';
import { useTRPC } from '../../client/trpc-react.tsx';

export interface DemoMerchant {
  id: string;
  name: string;
}

/** Signs the browser in as a demo merchant (a signed, HttpOnly session cookie). */
export function TenantPicker({
  merchants,
  onSignedIn,
}: {
  merchants: readonly DemoMerchant[];
  onSignedIn?: () => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const start = useMutation(
    trpc.session.start.mutationOptions({
      onSuccess: () => {
        onSignedIn?.();
        return queryClient.invalidateQueries();
      },
    }),
  );
  return (
    <section className="card" aria-labelledby="pick-merchant">
      <h2 id="pick-merchant" className="card-title">
        Pick a demo merchant
      </h2>
      <p className="muted">
        The merchant (tenant) is kept in a signed cookie, never sent in a request body.
      </p>
      <div className="merchants">
        {merchants.map((merchant) => (
          <button
            key={merchant.id}
            type="button"
            data-testid={`merchant-${merchant.id}`}
            disabled={start.isPending}
            onClick={() => start.mutate({ demoTenantId: merchant.id })}
          >
            {merchant.name}
          </button>
        ))}
      </div>
      {start.error ? (
        <p role="alert" className="error">
          Could not sign in. {errorWords(start.error)}
        </p>
      ) : null}
    </section>
  );
}
