'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useTRPC } from '../../../client/trpc-react.tsx';
import tones from '../money/money.module.css';
import { OpsTable, Time } from '../ops-table.tsx';
import { deliveryStateOf, lastAnswerOf, type WebhookDelivery } from './delivery-state.ts';
import { ResendButton } from './resend-button.tsx';

/** The outbox moves on its own (retries, backoff): ask again this often. */
const REFRESH_MS = 3_000;

/** How many of the merchant's newest events the cockpit shows. */
const RECENT = 20;

/** The processor's webhook deliveries, live: of one payment on its page, else the newest. */
export function WebhookDeliveriesPanel({ paymentId }: { paymentId?: string }) {
  const trpc = useTRPC();
  const outbox = useQuery({
    ...trpc.ops.webhookDeliveries.queryOptions(paymentId ? { paymentId } : { limit: RECENT }),
    refetchInterval: REFRESH_MS,
    retry: false,
  });
  const data = outbox.data;
  const note =
    data?.processor === 'no_intent'
      ? 'No events yet: the payment has no PaymentIntent at the processor.'
      : data?.processor === 'unreachable' || data?.processor === 'no_account'
        ? `The processor could not be asked: ${data.processorError}.`
        : undefined;
  return (
    <OpsTable
      title="Webhook deliveries"
      testId="webhook-deliveries"
      rows={data?.deliveries}
      rowKey={(row) => row.eventId}
      description={`The processor's events ${paymentId ? 'about this payment' : `(the newest ${RECENT})`} and their delivery to the app, newest first. A resend sends the same event id, which the app applies once. Refreshes every ${REFRESH_MS / 1000} s.`}
      note={note ? <p className="muted small">{note}</p> : undefined}
      error={outbox.error?.message}
      columns={[
        {
          header: 'Event',
          cell: (row) => (
            <>
              {row.type}
              <br />
              <code className="small">{row.eventId}</code>
            </>
          ),
        },
        ...(paymentId
          ? []
          : [
              { header: 'Payment', cell: (row: WebhookDelivery) => <PaymentLink delivery={row} /> },
            ]),
        { header: 'Delivery', cell: (row) => <DeliveryStateCell delivery={row} /> },
        { header: 'Attempts', cell: (row) => row.attempts },
        { header: 'Last answer', cell: (row) => lastAnswerOf(row) },
        {
          header: 'Resend',
          cell: (row) => <ResendButton eventId={row.eventId} type={row.type} />,
        },
      ]}
    />
  );
}

function PaymentLink({ delivery }: { delivery: WebhookDelivery }) {
  if (!delivery.paymentId) {
    return <code className="small">{delivery.paymentIntentId ?? '—'}</code>;
  }
  return (
    <Link href={`/ops/payments/${encodeURIComponent(delivery.paymentId)}`}>
      <code className="small">{delivery.paymentId}</code>
    </Link>
  );
}

const DELIVERY_TONES = {
  delivered: tones.ok,
  retrying: tones.warn,
  queued: 'muted',
  failed: tones.bad,
} as const;

function DeliveryStateCell({ delivery }: { delivery: WebhookDelivery }) {
  const state = deliveryStateOf(delivery);
  return (
    <span
      className={DELIVERY_TONES[state.kind]}
      data-testid="delivery-state"
      data-state={state.kind}
    >
      {state.kind === 'delivered' ? (
        <>
          delivered <Time iso={state.at} />
        </>
      ) : state.kind === 'retrying' ? (
        <>
          retrying, next <Time iso={state.nextAt} />
        </>
      ) : state.kind === 'queued' ? (
        'queued'
      ) : (
        'failed: no automatic retry left'
      )}
    </span>
  );
}
