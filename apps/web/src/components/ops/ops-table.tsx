'use client';

import { type ReactNode, useState } from 'react';
import { formatTimestamp } from '../format/time.ts';

export interface Column<Row> {
  header: string;
  cell: (row: Row) => ReactNode;
}

/** A table with more rows than this starts folded: its heading and count stay in view. */
const SHORT_TABLE_ROWS = 8;

/**
 * A plain, accessible table of rows; `testId` names it for tests. Folds into its heading
 * (a `<details>` whose summary carries the count) once it holds more than
 * {@link SHORT_TABLE_ROWS} rows, until the operator opens or closes it themselves. Wide
 * tables scroll sideways inside their own keyboard-focusable region, never the page.
 */
export function OpsTable<Row>(props: {
  title: string;
  testId: string;
  rows: readonly Row[] | undefined;
  rowKey: (row: Row) => string;
  columns: readonly Column<Row>[];
  error?: string;
  /** A line under the heading, e.g. what the table is for; folds with the table. */
  description?: ReactNode;
  /** What stays in view under the heading even while the table is folded. */
  note?: ReactNode;
}) {
  const { title, testId, rows, rowKey, columns, error, description, note } = props;
  // null: the operator has not chosen; the table is open while it is short.
  const [chosen, setChosen] = useState<boolean | null>(null);
  const open = chosen ?? (rows?.length ?? 0) <= SHORT_TABLE_ROWS;
  const titleId = `${testId}-title`;
  return (
    <section className="card ops-section" aria-labelledby={titleId}>
      <details
        open={open}
        onToggle={(event) => {
          // React setting `open` fires toggle too: only a change of the operator's counts.
          if (event.currentTarget.open !== open) setChosen(event.currentTarget.open);
        }}
      >
        <summary>
          <h2 id={titleId} className="card-title">
            {title}
          </h2>{' '}
          {rows ? (
            <span className="ops-count" data-testid={`${testId}-count`}>
              {rows.length}
              <span className="visually-hidden"> rows</span>
            </span>
          ) : null}
        </summary>
        {description ? <p className="muted small ops-description">{description}</p> : null}
        {/* A region that scrolls sideways must be reachable by keyboard to scroll it. */}
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: see above. */}
        <section className="scroll" tabIndex={0} aria-label={`${title}, table`}>
          <table className="table" data-testid={testId}>
            <thead>
              <tr>
                {columns.map((column) => (
                  <th key={column.header} scope="col">
                    {column.header}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows?.map((row) => (
                <tr key={rowKey(row)}>
                  {columns.map((column) => (
                    <td key={column.header}>{column.cell(row)}</td>
                  ))}
                </tr>
              ))}
              {rows && rows.length === 0 ? (
                <tr>
                  <td colSpan={columns.length} className="muted">
                    Nothing yet.
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </section>
      </details>
      {note}
      {error ? <p className="error">{error}</p> : null}
    </section>
  );
}

/** A moment written by {@link formatTimestamp}, with the full ISO value on hover. */
export function Time({ iso }: { iso: string | null }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {formatTimestamp(iso)}
    </time>
  );
}

/** A status as a coloured badge. */
export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value}`}>{value}</span>;
}

/** One term of a definition list with its value, together in a `div` (for a wrapping layout). */
export function Fact({
  term,
  testId,
  children,
}: {
  term: string;
  testId?: string;
  children: ReactNode;
}) {
  return (
    <div>
      <dt>{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}
