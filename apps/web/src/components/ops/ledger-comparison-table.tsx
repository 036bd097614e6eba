import type {
  LedgerVerdict,
  LedgerVerdictSeverity,
  OpsLedgerResult,
  OpsLedgerRow,
} from '@once/api/ops';
import { formatMoney } from '../format/money.ts';
import { Badge, OpsTable, Time } from './ops-table.tsx';

/**
 * How loudly each verdict is shown: the only runtime copy. It lives here, not in @once/api,
 * because this is its one reader and the browser bundle takes only types from the server
 * package; `Record<LedgerVerdict, ...>` fails to compile when a verdict is added there.
 */
export const verdictTone: Record<LedgerVerdict, LedgerVerdictSeverity> = {
  agrees: 'ok',
  not_charged: 'pending',
  app_behind: 'pending',
  unverified: 'pending',
  double_charge: 'alarm',
  charged_but_app_declined_or_failed: 'alarm',
  succeeded_without_charge: 'alarm',
  mismatch: 'alarm',
};

/** The verdict as a highlighted label; `data-verdict` is what tests read. */
export function VerdictLabel({ verdict, reason }: { verdict: LedgerVerdict; reason: string }) {
  const tone = verdictTone[verdict];
  return (
    <span className={`verdict verdict-${tone}`} data-verdict={verdict} title={reason}>
      {tone === 'alarm' ? '⚠ ' : ''}
      {verdict}
    </span>
  );
}

function processorStatusLine(result: OpsLedgerResult | undefined) {
  if (!result) return null;
  if (result.processor === 'reachable') {
    const alarms = result.rows.filter((row) => verdictTone[row.verdict] === 'alarm').length;
    return (
      <p className={alarms > 0 ? 'error' : 'muted'} data-testid="ops-ledger-summary">
        Ledger of <code>{result.processorAccountId}</code> read at <Time iso={result.checkedAt} />;{' '}
        {alarms > 0
          ? `${alarms} payment${alarms === 1 ? ' needs' : 's need'} attention.`
          : 'app and processor agree.'}
      </p>
    );
  }
  return (
    <p className="error" data-testid="ops-ledger-summary" data-processor={result.processor}>
      Processor {result.processor === 'no_account' ? 'account not configured' : 'unreachable'}:
      showing the app side only ({result.processorError}).
    </p>
  );
}

/**
 * The fourth cockpit table: each payment's status in the app next to the processor's ledger
 * (charges, PaymentIntent, amount) and the verdict, so a double charge or a payment the app
 * got wrong stands out without reading two databases.
 */
export function LedgerComparisonTable({
  result,
  error,
}: {
  result: OpsLedgerResult | undefined;
  error: string | undefined;
}) {
  return (
    <div data-testid="ops-ledger-section" data-processor={result?.processor}>
      <OpsTable<OpsLedgerRow>
        title="App vs processor ledger"
        testId="ops-ledger"
        description="Each payment as the app recorded it next to the charges the processor holds for it: exactly one charge per paid payment, none for a declined one."
        rows={result?.rows}
        rowKey={(row) => row.paymentId}
        error={error}
        note={processorStatusLine(result)}
        columns={[
          { header: 'Payment', cell: (row) => <code className="small">{row.paymentId}</code> },
          { header: 'App status', cell: (row) => <Badge value={row.appStatus} /> },
          { header: 'App amount', cell: (row) => formatMoney(row.appAmount, row.appCurrency) },
          {
            header: 'Charges',
            cell: (row) => (row.processor ? row.processor.chargeCount : '—'),
          },
          {
            header: 'Processor intent',
            cell: (row) => (
              <code className="small">{row.processor?.paymentIntentIds.join(', ') || '—'}</code>
            ),
          },
          {
            header: 'Charged',
            cell: (row) =>
              row.processor?.currency
                ? formatMoney(row.processor.chargedAmount, row.processor.currency)
                : '—',
          },
          {
            header: 'Verdict',
            cell: (row) => <VerdictLabel verdict={row.verdict} reason={row.reason} />,
          },
          { header: 'Why', cell: (row) => <span className="small">{row.reason}</span> },
        ]}
      />
    </div>
  );
}
