'use client';

import type { RouterInputs, RouterOutputs } from '@once/api';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { useTRPC } from '../../client/trpc-react.tsx';
import type { DemoMerchant } from '../checkout/tenant-picker.tsx';
import { formatMoney } from '../format/money.ts';
import { ChaosSwitches } from './chaos-switches.tsx';
import { KeyActionsPanel } from './key-actions-panel.tsx';
import { LedgerComparisonTable } from './ledger-comparison-table.tsx';
import { OperatorSignIn, OperatorSignOut } from './operator-sign-in.tsx';
import { Badge, OpsTable, Time } from './ops-table.tsx';
import { StuckPaymentsLine } from './stuck-payments-line.tsx';
import { VerdictStrip } from './verdict-strip.tsx';
import { WebhookDeliveriesPanel } from './webhooks/webhook-deliveries-panel.tsx';

type Payment = RouterOutputs['ops']['payments'][number];
type IdempotencyKeyRow = RouterOutputs['ops']['idempotencyKeys'][number];
type OutboxJob = RouterOutputs['ops']['outbox'][number];
type KeyState = NonNullable<Exclude<RouterInputs['ops']['idempotencyKeys'], void>['state']>;

/**
 * The key filter's choices: every state the API accepts (a record, so a state added there must
 * be named here), tombstones included.
 */
export const KEY_STATE_WORDS: Record<KeyState, string> = {
  in_progress: 'in progress',
  completed: 'completed',
  released: 'released',
  unknown: 'outcome unknown',
  expired: 'expired (tombstone)',
};

/** How many rows each table asks for. */
const LIMIT = 50;

/** How often the cockpit refreshes. */
const REFRESH_MS = 2_000;

/** Lease left on an in-progress key, or how long ago it ran out. */
function leaseLabel(lockedUntil: string | null, now: number): string {
  if (!lockedUntil) return '—';
  const seconds = Math.round((Date.parse(lockedUntil) - now) / 1000);
  return seconds >= 0 ? `${seconds} s left` : `expired ${-seconds} s ago`;
}

/**
 * The operator cockpit: payments, idempotency keys, outbox jobs, webhook events (received and
 * delivered) and the app-vs-processor ledger comparison of the signed-in merchant. Asks for an
 * operator credential first (a shopper's session of the checkout does not open it).
 */
export function OpsCockpit({ merchants }: { merchants: readonly DemoMerchant[] }) {
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  if (!mounted) return <p className="muted">Loading cockpit…</p>;
  return <Cockpit merchants={merchants} />;
}

function Cockpit({ merchants }: { merchants: readonly DemoMerchant[] }) {
  const trpc = useTRPC();
  const session = useQuery({ ...trpc.session.current.queryOptions(), retry: false });
  // Only an operator may read ops.*: a shopper session would only collect FORBIDDEN answers.
  const isOperator = session.data?.role === 'operator';
  const live = { enabled: isOperator, refetchInterval: REFRESH_MS } as const;
  const payments = useQuery({ ...trpc.ops.payments.queryOptions({ limit: LIMIT }), ...live });
  const [keyState, setKeyState] = useState<KeyState | ''>('');
  const keys = useQuery({
    ...trpc.ops.idempotencyKeys.queryOptions({
      limit: LIMIT,
      ...(keyState ? { state: keyState } : {}),
    }),
    ...live,
  });
  const outbox = useQuery({ ...trpc.ops.outbox.queryOptions({ limit: LIMIT }), ...live });
  const ledger = useQuery({ ...trpc.ops.ledger.queryOptions({ limit: LIMIT }), ...live });
  const stuck = useQuery({ ...trpc.ops.stuckPayments.queryOptions(), ...live });
  const now = keys.dataUpdatedAt || Date.now();
  // Webhook events are stored as keys too (`webhooks.processor`); apart, they do not double
  // the clients' keys.
  const isWebhookKey = (k: IdempotencyKeyRow) => k.operation.startsWith('webhooks.');
  const requestKeys = keys.data?.filter((k) => !isWebhookKey(k));
  const webhookKeys = keys.data?.filter(isWebhookKey);

  if (session.isPending) return <p className="muted">Checking your session…</p>;
  if (!session.data || !isOperator) {
    return <OperatorSignIn merchants={merchants} signedInAs={session.data ?? undefined} />;
  }

  return (
    <div className="ops">
      <VerdictStrip
        tenantId={session.data.tenantId}
        limit={LIMIT}
        ledger={ledger.data}
        ledgerError={ledger.error ?? undefined}
        stuck={stuck.data}
        readLedger={async () => (await ledger.refetch()).data}
      />
      <p className="muted">
        Payments of <strong>{session.data.tenantName}</strong>, updated every {REFRESH_MS / 1000}{' '}
        seconds. <OperatorSignOut />
      </p>
      <StuckPaymentsLine result={stuck.data} />
      <ChaosSwitches />
      <OpsTable<Payment>
        title="Payments"
        testId="ops-payments"
        description="What each customer paid for, newest first; open a timeline to see every step."
        rows={payments.data}
        rowKey={(p) => p.paymentId}
        error={payments.error?.message}
        columns={[
          { header: 'Payment', cell: (p) => <code>{p.paymentId}</code> },
          { header: 'Status', cell: (p) => <Badge value={p.status} /> },
          { header: 'Amount', cell: (p) => formatMoney(p.amount, p.currency) },
          {
            header: 'Idempotency-Key',
            cell: (p) => <code className="small">{p.idempotencyKey}</code>,
          },
          {
            header: 'Downstream key',
            cell: (p) => <code className="small">{p.downstreamKey}</code>,
          },
          {
            header: 'Processor intent',
            cell: (p) => <code className="small">{p.processorPaymentIntentId ?? '—'}</code>,
          },
          { header: 'Failure', cell: (p) => p.failureCode ?? '' },
          { header: 'Updated', cell: (p) => <Time iso={p.updatedAt} /> },
          {
            header: 'Timeline',
            cell: (p) => (
              <Link href={`/ops/payments/${encodeURIComponent(p.paymentId)}`}>
                Timeline<span className="visually-hidden"> of {p.paymentId}</span>
              </Link>
            ),
          },
        ]}
      />
      <OpsTable<IdempotencyKeyRow>
        title="Idempotency keys"
        testId="ops-keys"
        description="One per request a client sent. A retry carrying the same key gets the first answer back instead of paying again."
        rows={requestKeys}
        rowKey={(k) => `${k.operation}/${k.key}`}
        error={keys.error?.message}
        note={
          <label className="small">
            State{' '}
            <select
              data-testid="ops-keys-state"
              value={keyState}
              onChange={(event) => setKeyState(event.currentTarget.value as KeyState | '')}
            >
              <option value="">all (keys and webhook events)</option>
              {Object.entries(KEY_STATE_WORDS).map(([state, words]) => (
                <option key={state} value={state}>
                  {words}
                </option>
              ))}
            </select>
          </label>
        }
        columns={[
          { header: 'Operation', cell: (k) => k.operation },
          { header: 'Key', cell: (k) => <code className="small">{k.key}</code> },
          { header: 'State', cell: (k) => <Badge value={k.state} /> },
          { header: 'Recovery point', cell: (k) => k.recoveryPoint },
          { header: 'Attempts', cell: (k) => k.attempts },
          { header: 'Response', cell: (k) => k.responseStatus ?? '—' },
          {
            header: 'Lease',
            cell: (k) => (k.state === 'in_progress' ? leaseLabel(k.lockedUntil, now) : '—'),
          },
          { header: 'Expires', cell: (k) => <Time iso={k.expiresAt} /> },
        ]}
      />
      <KeyActionsPanel />
      <OpsTable<OutboxJob>
        title="Outbox jobs"
        testId="ops-outbox"
        description="The work handed to the workers: one job charges one payment at the processor."
        rows={outbox.data}
        rowKey={(j) => j.jobId}
        error={outbox.error?.message}
        columns={[
          { header: 'Job', cell: (j) => <code className="small">{j.jobId}</code> },
          { header: 'Payment', cell: (j) => <code className="small">{j.paymentId}</code> },
          { header: 'Status', cell: (j) => <Badge value={j.status} /> },
          { header: 'Attempts', cell: (j) => `${j.attempts} / ${j.maxAttempts}` },
          { header: 'Locked by', cell: (j) => j.lockedBy ?? '—' },
          {
            header: 'Lease',
            cell: (j) => (j.status === 'running' ? leaseLabel(j.lockedUntil, now) : '—'),
          },
          { header: 'Run after', cell: (j) => <Time iso={j.runAfter} /> },
          { header: 'Last error', cell: (j) => <span className="small">{j.lastError ?? ''}</span> },
        ]}
      />
      <OpsTable<IdempotencyKeyRow>
        title="Webhook events received"
        testId="ops-webhook-keys"
        description="Each event the processor sent is kept under its event id like a key: a redelivery of the same event is answered from the first answer and changes nothing."
        rows={webhookKeys}
        rowKey={(k) => `${k.operation}/${k.key}`}
        error={keys.error?.message}
        columns={[
          { header: 'Event', cell: (k) => <code className="small">{k.key}</code> },
          { header: 'State', cell: (k) => <Badge value={k.state} /> },
          { header: 'Attempts', cell: (k) => k.attempts },
          { header: 'Response', cell: (k) => k.responseStatus ?? '—' },
          { header: 'Received', cell: (k) => <Time iso={k.createdAt} /> },
        ]}
      />
      <WebhookDeliveriesPanel />
      <LedgerComparisonTable result={ledger.data} error={ledger.error?.message} />
    </div>
  );
}
