'use client';

import type { RouterInputs, RouterOutputs } from '@once/api';
import { type FormEvent, useState } from 'react';
import type { OperatorActionState } from '../../../client/operator-action-intent.ts';
import { useTRPCClient } from '../../../client/trpc-react.tsx';
import { useOperatorAction } from '../../../client/use-operator-action.ts';
import { formatMoney } from '../../format/money.ts';
import { Badge, Fact } from '../ops-table.tsx';
import { ActionAnswer } from './action-answer.tsx';
import styles from './money.module.css';

type PaymentMoney = RouterOutputs['ops']['paymentMoney'];
type RefundReason = NonNullable<RouterInputs['ops']['refundPayment']['reason']>;

/**
 * An amount typed in the currency's major units ("12.50") as minor units; empty: none given.
 *
 * @example
 * minorUnits('12.5'); // 1250
 */
function minorUnits(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  return Math.round(Number(trimmed) * 100);
}

/**
 * Whether a press would resend an unfinished action (same key): enabled whatever the payment
 * shows, since the first request may have moved it already.
 */
function retrying(state: OperatorActionState<unknown>): boolean {
  return state.phase === 'sending' || state.phase === 'no_answer';
}

/**
 * The money buttons of one payment: capture (all or part) and void while it is authorised,
 * refund (part or the rest, several times) once money was received, with its refunds and their
 * states. Each button is idempotent on its own (`useOperatorAction`): a double click or a retry
 * sends the same key, so money moves once.
 */
export function MoneyActionsPanel({ money }: { money: PaymentMoney }) {
  const { payment, refunds } = money;
  const client = useTRPCClient();
  const paymentId = payment.paymentId;
  const capture = useOperatorAction(paymentId, 'capture', (input: { amount?: number }, context) =>
    client.ops.capturePayment.mutate({ paymentId, ...input }, { context }),
  );
  const voiding = useOperatorAction(paymentId, 'void', (_input: Record<string, never>, context) =>
    client.ops.voidPayment.mutate({ paymentId }, { context }),
  );
  const refund = useOperatorAction(
    paymentId,
    'refund',
    (input: { amount?: number; reason?: RefundReason }, context) =>
      client.ops.refundPayment.mutate({ paymentId, ...input }, { context }),
  );
  const [captureAmount, setCaptureAmount] = useState('');
  const [refundAmount, setRefundAmount] = useState('');
  const [reason, setReason] = useState<RefundReason | ''>('');

  const money$ = (amount: number) => formatMoney(amount, payment.currency);
  const authorised = payment.status === 'requires_capture';
  const refundable = payment.amountReceived - payment.amountRefunded;
  const refundState = refund.state;
  const refunded =
    refundState.phase === 'accepted'
      ? refunds.find((r) => r.refundId === refundState.result.refundId)
      : undefined;

  function onCapture(event: FormEvent) {
    event.preventDefault();
    const amount = minorUnits(captureAmount);
    capture.press(amount === undefined ? {} : { amount });
  }
  function onRefund(event: FormEvent) {
    event.preventDefault();
    const amount = minorUnits(refundAmount);
    refund.press({
      ...(amount === undefined ? {} : { amount }),
      ...(reason ? { reason } : {}),
    });
  }

  return (
    <section className="card" aria-labelledby="money-title" data-testid="money-actions">
      <h2 id="money-title">Money</h2>
      <dl className={styles.facts}>
        <Fact term="Capture">{payment.captureMethod}</Fact>
        <Fact term="Capturable" testId="money-capturable">
          {money$(payment.amountCapturable)}
        </Fact>
        <Fact term="Received" testId="money-received">
          {money$(payment.amountReceived)}
        </Fact>
        <Fact term="Refunded" testId="money-refunded">
          {money$(payment.amountRefunded)}
        </Fact>
      </dl>
      <div className={styles.actions}>
        <form className={styles.action} onSubmit={onCapture} aria-labelledby="capture-title">
          <h3 id="capture-title">Capture</h3>
          <label className={styles.field}>
            Amount (empty: all {money$(payment.amountCapturable)})
            <input
              inputMode="decimal"
              value={captureAmount}
              onChange={(e) => setCaptureAmount(e.target.value)}
              pattern="[0-9]+([.][0-9]{1,2})?"
              disabled={!authorised}
            />
          </label>
          <button
            type="submit"
            className="primary"
            disabled={!authorised && !retrying(capture.state)}
          >
            Capture
          </button>
          <ActionAnswer
            state={capture.state}
            testId="capture-answer"
            done={
              payment.status === 'succeeded'
                ? { ok: true, text: `captured ${money$(payment.amountReceived)}` }
                : undefined
            }
          />
        </form>
        <div className={styles.action}>
          <h3>Void</h3>
          <p className="muted small">Release the whole authorisation; nothing is charged.</p>
          <button
            type="button"
            onClick={() => voiding.press({})}
            disabled={!authorised && !retrying(voiding.state)}
          >
            Void
          </button>
          <ActionAnswer
            state={voiding.state}
            testId="void-answer"
            done={
              payment.status === 'canceled'
                ? {
                    ok: true,
                    // The processor ended it uncaptured (its window passed): nobody pressed Void.
                    text:
                      payment.failureCode === 'authorization_expired'
                        ? 'authorisation expired: voided by the processor, nothing capturable'
                        : 'voided',
                  }
                : undefined
            }
          />
        </div>
        <form className={styles.action} onSubmit={onRefund} aria-labelledby="refund-title">
          <h3 id="refund-title">Refund</h3>
          <label className={styles.field}>
            Amount (empty: the rest, {money$(refundable)})
            <input
              inputMode="decimal"
              value={refundAmount}
              onChange={(e) => setRefundAmount(e.target.value)}
              pattern="[0-9]+([.][0-9]{1,2})?"
            />
          </label>
          <label className={styles.field}>
            Reason
            <select value={reason} onChange={(e) => setReason(e.target.value as RefundReason | '')}>
              <option value="">none given</option>
              <option value="requested_by_customer">requested by customer</option>
              <option value="duplicate">duplicate</option>
              <option value="fraudulent">fraudulent</option>
            </select>
          </label>
          <button type="submit" className="primary">
            Refund
          </button>
          <ActionAnswer
            state={refund.state}
            testId="refund-answer"
            done={
              refunded && refunded.status !== 'pending'
                ? {
                    ok: refunded.status === 'succeeded',
                    text: `refund of ${money$(refunded.amount)} ${refunded.status}${refunded.failureCode ? ` (${refunded.failureCode})` : ''}`,
                  }
                : undefined
            }
          />
        </form>
      </div>
      <h3>Refunds</h3>
      {refunds.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <div className="scroll">
          <table className="table" data-testid="refunds">
            <thead>
              <tr>
                <th scope="col">Refund</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col">Status</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {refunds.map((r) => (
                <tr key={r.refundId}>
                  <td>
                    <code className="small">{r.refundId}</code>
                  </td>
                  <td className="num">{money$(r.amount)}</td>
                  <td>
                    <Badge value={r.status} />
                    {r.failureCode ? <span className="muted small"> {r.failureCode}</span> : null}
                  </td>
                  <td>{r.reason ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
