'use client';

import type { RouterOutputs } from '@once/api';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { useTRPC } from '../../client/trpc-react.tsx';
import { Badge, Time } from './ops-table.tsx';

type KeySummary = NonNullable<RouterOutputs['ops']['idempotencyKey']>;
type Identity = { operation: string; key: string };

/**
 * Look up one idempotency key of the merchant and release or evict it. What the operator saw
 * (its `revision`) goes with the action, so a key that changed meanwhile is refused instead of
 * acted on blindly; every action needs a reason and is audited on the server. The buttons are
 * enabled only when the server says the action is allowed for the key's state.
 */
export function KeyActionsPanel() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [operation, setOperation] = useState('checkout.pay');
  const [key, setKey] = useState('');
  const [looked, setLooked] = useState<Identity | undefined>(undefined);
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>(undefined);

  const found = useQuery({
    ...trpc.ops.idempotencyKey.queryOptions(looked ?? { operation: '-', key: '-' }),
    enabled: looked !== undefined,
    retry: false,
  });
  const onDone = {
    onSuccess: (entry: { action: string; fromState: string; toState: string }) => {
      setOutcome({ ok: true, text: `${entry.action}: ${entry.fromState} → ${entry.toState}` });
      setReason('');
      void queryClient.invalidateQueries();
    },
    onError: (error: { message: string }) => setOutcome({ ok: false, text: error.message }),
  };
  const release = useMutation(trpc.ops.releaseIdempotencyKey.mutationOptions(onDone));
  const evict = useMutation(trpc.ops.evictIdempotencyKey.mutationOptions(onDone));
  const busy = release.isPending || evict.isPending;

  function lookUp(event: FormEvent) {
    event.preventDefault();
    setOutcome(undefined);
    setLooked({ operation: operation.trim(), key: key.trim() });
  }

  function act(action: typeof release | typeof evict, { operation, key, revision }: KeySummary) {
    setOutcome(undefined);
    action.mutate({ operation, key, revision, reason });
  }

  const summary = found.data;
  const reasonOk = reason.trim().length >= 3;
  return (
    <section className="card" aria-labelledby="key-actions-title" data-testid="key-actions">
      <h2 id="key-actions-title" className="card-title">
        Look up, release or evict a key
      </h2>
      <form onSubmit={lookUp} className="key-lookup">
        <label>
          Operation{' '}
          <input value={operation} onChange={(e) => setOperation(e.target.value)} required />
        </label>{' '}
        <label>
          Idempotency-Key <input value={key} onChange={(e) => setKey(e.target.value)} required />
        </label>{' '}
        <button type="submit">Look up</button>
      </form>
      {found.error ? <p className="error">{found.error.message}</p> : null}
      {looked && found.isSuccess && !summary ? (
        <p className="muted" role="status">
          No such key for this merchant.
        </p>
      ) : null}
      {summary ? (
        <div data-testid="key-summary">
          <dl className="key-facts">
            <dt>State</dt>
            <dd>
              <Badge value={summary.state} />
            </dd>
            <dt>Recovery point</dt>
            <dd>{summary.recoveryPoint}</dd>
            <dt>Attempts</dt>
            <dd>{summary.attempts}</dd>
            <dt>Lease</dt>
            <dd>
              {summary.lockedUntil ? (
                <>
                  {summary.leaseOwner ?? '—'} until <Time iso={summary.lockedUntil} />
                  {summary.leaseExpired ? ' (expired)' : ''}
                </>
              ) : (
                '—'
              )}
            </dd>
            <dt>Response status</dt>
            <dd>{summary.responseStatus ?? '—'}</dd>
            <dt>Fingerprint</dt>
            <dd>
              <code className="small">{summary.fingerprintPrefix}…</code>
            </dd>
            <dt>Created / updated / expires</dt>
            <dd>
              <Time iso={summary.createdAt} /> / <Time iso={summary.updatedAt} /> /{' '}
              <Time iso={summary.expiresAt} />
            </dd>
          </dl>
          <label>
            Reason (audited){' '}
            <input
              value={reason}
              onChange={(e) => setReason(e.target.value)}
              placeholder="e.g. INC-42: worker died before charging"
              maxLength={500}
            />
          </label>{' '}
          <button
            type="button"
            disabled={!summary.releasable || !reasonOk || busy}
            onClick={() => act(release, summary)}
            title="An expired lease that committed nothing, or an unknown key reconciled as not charged"
          >
            Release
          </button>{' '}
          <button
            type="button"
            disabled={!summary.evictable || !reasonOk || busy}
            onClick={() => act(evict, summary)}
            title="A completed or released key: its next request runs again"
          >
            Evict
          </button>
        </div>
      ) : null}
      <p aria-live="polite" className={outcome && !outcome.ok ? 'error' : undefined}>
        {outcome?.text ?? ''}
      </p>
    </section>
  );
}
