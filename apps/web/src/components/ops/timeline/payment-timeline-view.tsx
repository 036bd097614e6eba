'use client';

import type { RouterOutputs } from '@once/api';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { useTRPC } from '../../../client/trpc-react.tsx';
import type { DemoMerchant } from '../../checkout/tenant-picker.tsx';
import { formatMoney } from '../../format/money.ts';
import { VerdictLabel } from '../ledger-comparison-table.tsx';
import { MoneyActionsPanel } from '../money/money-actions-panel.tsx';
import { OperatorSignIn } from '../operator-sign-in.tsx';
import { Badge, Fact, Time } from '../ops-table.tsx';
import { WebhookDeliveriesPanel } from '../webhooks/webhook-deliveries-panel.tsx';
import { keyStoriesOf } from './key-stories.ts';
import { KeyStoriesTable } from './key-stories-table.tsx';
import styles from './timeline.module.css';
import { TimelineDiagram } from './timeline-diagram.tsx';
import { laneTitle, timelineOf } from './timeline-model.ts';
import { TimelineTable } from './timeline-table.tsx';

type Timeline = RouterOutputs['ops']['paymentTimeline'];
type PaymentMoney = RouterOutputs['ops']['paymentMoney'];

/** How often the timeline asks again: it is live while the payment moves. */
const REFRESH_MS = 1_500;

/**
 * The life of one payment, live: every recorded event drawn as lanes per process with an
 * arrow per call, the same events as a table, and the processor ledger's verdict. Operator
 * only, like the cockpit.
 */
export function PaymentTimelineView({
  paymentId,
  merchants,
}: {
  paymentId: string;
  merchants: readonly DemoMerchant[];
}) {
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  if (!mounted) return <p className="muted">Loading timeline…</p>;
  return <LiveTimeline paymentId={paymentId} merchants={merchants} />;
}

function LiveTimeline({
  paymentId,
  merchants,
}: {
  paymentId: string;
  merchants: readonly DemoMerchant[];
}) {
  const trpc = useTRPC();
  const session = useQuery({ ...trpc.session.current.queryOptions(), retry: false });
  const isOperator = session.data?.role === 'operator';
  const live = { enabled: isOperator, refetchInterval: REFRESH_MS, retry: false } as const;
  const timeline = useQuery({ ...trpc.ops.paymentTimeline.queryOptions({ paymentId }), ...live });
  const money = useQuery({ ...trpc.ops.paymentMoney.queryOptions({ paymentId }), ...live });

  if (session.isPending) return <p className="muted">Checking your session…</p>;
  if (!session.data || !isOperator) {
    return <OperatorSignIn merchants={merchants} signedInAs={session.data ?? undefined} />;
  }
  return (
    <div className="ops">
      <p>
        <Link href="/ops">← Back to the cockpit</Link>
      </p>
      {timeline.error ? (
        <p className="error" role="alert">
          {timeline.error.message}
        </p>
      ) : null}
      {timeline.data ? (
        <TimelineBody timeline={timeline.data} money={money.data} />
      ) : timeline.error ? null : (
        <p className="muted">Loading timeline…</p>
      )}
    </div>
  );
}

function TimelineBody({
  timeline,
  money,
}: {
  timeline: Timeline;
  money: PaymentMoney | undefined;
}) {
  const { payment, ledger } = timeline;
  const { lanes, steps } = timelineOf(timeline.events);
  const summary = `${steps.length} events across ${lanes.length} processes (${lanes.map(laneTitle).join(', ')}). Payment ${payment.status}; ledger verdict ${ledger.verdict}: ${ledger.reason}.`;
  return (
    <>
      <section className="card" aria-labelledby="timeline-summary-title">
        <h2 id="timeline-summary-title">Payment</h2>
        <dl className={styles.summary}>
          <Fact term="Payment id">
            <code className="small" data-testid="timeline-payment-id">
              {payment.paymentId}
            </code>
          </Fact>
          <Fact term="Status" testId="timeline-status">
            <Badge value={payment.status} />
          </Fact>
          <Fact term="Amount">{formatMoney(payment.amount, payment.currency)}</Fact>
          <Fact term="Ledger verdict" testId="timeline-verdict">
            <VerdictLabel verdict={ledger.verdict} reason={ledger.reason} />{' '}
            <span className="muted">{ledger.reason}</span>
          </Fact>
          <Fact term="Charges at the processor">{ledger.side ? ledger.side.chargeCount : '—'}</Fact>
          <Fact term="Idempotency-Key">
            <code className="small">{payment.idempotencyKey}</code>
          </Fact>
          <Fact term="Downstream key">
            <code className="small">{payment.downstreamKey}</code>
          </Fact>
          <Fact term="Checked">
            <Time iso={ledger.checkedAt} />
          </Fact>
        </dl>
      </section>
      {money ? <MoneyActionsPanel money={money} /> : null}
      <WebhookDeliveriesPanel paymentId={payment.paymentId} />
      <section className="card" aria-labelledby="key-stories-title">
        <h2 id="key-stories-title">Requests per idempotency key</h2>
        <KeyStoriesTable stories={keyStoriesOf(timeline.events)} />
      </section>
      <section className="card" aria-labelledby="timeline-picture-title">
        <h2 id="timeline-picture-title">What happened, process by process</h2>
        <p className="muted">
          Time runs down; an arrow is a call from one process to another, a dot something that
          happened inside one, a cross a fault (a broken call, a process that stopped answering), a
          dashed band time with nothing recorded. A restarted worker gets a lane of its own.
          Refreshes every {REFRESH_MS / 1000} s.
        </p>
        <TimelineDiagram lanes={lanes} steps={steps} summary={summary} />
      </section>
      <section className="card" aria-labelledby="timeline-events-title">
        <h2 id="timeline-events-title">Events</h2>
        <TimelineTable steps={steps} />
      </section>
    </>
  );
}
