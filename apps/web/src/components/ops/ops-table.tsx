import type { ReactNode } from 'react';

export interface Column<Row> {
  header: string;
  cell: (row: Row) => ReactNode;
}

/** A plain, accessible table of rows; `testId` names it for tests. */
export function OpsTable<Row>(props: {
  title: string;
  testId: string;
  rows: readonly Row[] | undefined;
  rowKey: (row: Row) => string;
  columns: readonly Column<Row>[];
  error?: string;
}) {
  const { title, testId, rows, rowKey, columns, error } = props;
  return (
    <section className="card" aria-labelledby={`${testId}-title`}>
      <h2 id={`${testId}-title`}>
        {title} {rows ? <span className="muted">({rows.length})</span> : null}
      </h2>
      {error ? <p className="error">{error}</p> : null}
      <div className="scroll">
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
      </div>
    </section>
  );
}

/** A timestamp as local time, with the full ISO value on hover. */
export function Time({ iso, withDate = false }: { iso: string | null; withDate?: boolean }) {
  if (!iso) return <span className="muted">—</span>;
  if (withDate) {
    return (
      <time dateTime={iso} title={iso}>
        {new Date(iso).toLocaleString()}
      </time>
    );
  }
  return (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleTimeString()}
    </time>
  );
}

/** A status as a coloured badge. */
export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value}`}>{value}</span>;
}
