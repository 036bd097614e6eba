import type { LatencySummary } from './stats.ts';

/** One measured variant of a scenario (a row of its table). */
export interface ResultRow {
  name: string;
  /** The row every other row of the scenario is compared with. */
  baseline?: boolean;
  /** Compare with this row instead of the scenario's baseline row. */
  comparedTo?: string;
  /** Completed operations per second (HTTP responses, or store operations). */
  throughput?: number;
  latency?: LatencySummary;
  /** Anything else worth a column: status counts, duplicates, deleted/s. */
  extra?: Record<string, string | number>;
  /** Throughput of each interleaved round (kept in the results file, not drawn in tables). */
  rounds?: number[];
}

/** A goal from the spec and whether this run met it. */
export interface GoalResult {
  goal: string;
  met: boolean | 'skipped';
  detail: string;
}

/** What a scenario hands back to the runner. */
export interface ScenarioResult {
  name: string;
  title: string;
  skipped?: string;
  /** Connections, durations, data sizes: everything needed to reproduce. */
  settings: Record<string, string | number | boolean>;
  rows: ResultRow[];
  goals: GoalResult[];
  /** Plain-language findings: where we fall short and why. */
  notes: string[];
  /** Set when the scenario comes from another run than the report's (a `--only` run merged in). */
  ranIn?: string;
}
