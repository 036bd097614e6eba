import type { ResultRow, ScenarioResult } from './result-types.ts';
import { round } from './stats.ts';

/** Ratios of a row to its baseline: throughput (higher is better), median and p99 (lower is better). */
export interface Ratios {
  throughput?: number;
  median?: number;
  p99?: number;
}

function baselineOf(result: ScenarioResult, row: ResultRow): ResultRow | undefined {
  const name = row.comparedTo;
  const base = name
    ? result.rows.find((r) => r.name === name)
    : result.rows.find((r) => r.baseline);
  return base === row ? undefined : base;
}

export function ratiosOf(result: ScenarioResult, row: ResultRow): Ratios {
  const base = baselineOf(result, row);
  if (!base) return {};
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b ? a / b : undefined;
  return {
    throughput: ratio(row.throughput, base.throughput),
    median: ratio(row.latency?.median, base.latency?.median),
    p99: ratio(row.latency?.p99, base.latency?.p99),
  };
}

const show = (value: number | undefined, suffix = '') =>
  value === undefined || Number.isNaN(value) ? '' : `${round(value)}${suffix}`;

/** A Markdown table of a scenario: one row per variant, ratios against its baseline. */
export function renderTable(result: ScenarioResult): string {
  if (result.skipped) return `_skipped: ${result.skipped}_`;
  const extraColumns = [...new Set(result.rows.flatMap((r) => Object.keys(r.extra ?? {})))];
  const rows = result.rows.map((row) => {
    const r = ratiosOf(result, row);
    const base = baselineOf(result, row);
    const name = row.baseline
      ? `${row.name} (baseline)`
      : base && row.comparedTo
        ? `${row.name} (vs ${base.name})`
        : row.name;
    return [
      name,
      show(row.throughput),
      show(row.latency?.median),
      show(row.latency?.p99),
      show(r.throughput, 'x'),
      show(r.median, 'x'),
      show(r.p99, 'x'),
      ...extraColumns.map((c) => String(row.extra?.[c] ?? '')),
    ];
  });
  const header = [
    'variant',
    'ops/s',
    'median ms',
    'p99 ms',
    'ops/s vs base',
    'median vs base',
    'p99 vs base',
    ...extraColumns,
  ];
  // A column no row fills (a scenario that counts instead of timing) is left out.
  const shown = header.map((_, i) => i === 0 || rows.some((cells) => cells[i] !== ''));
  const pick = (cells: string[]) => cells.filter((_, i) => shown[i]);
  const lines = [
    `| ${pick(header).join(' | ')} |`,
    `|${pick(header)
      .map(() => '---')
      .join('|')}|`,
  ];
  for (const cells of rows) lines.push(`| ${pick(cells).join(' | ')} |`);
  return lines.join('\n');
}

/** Goals as a Markdown list with met / NOT met. */
export function renderGoals(result: ScenarioResult): string {
  return result.goals
    .map(
      (g) =>
        `- ${g.met === 'skipped' ? 'skipped' : g.met ? 'met' : '**NOT met**'}: ${g.goal}. ${g.detail}`,
    )
    .join('\n');
}
