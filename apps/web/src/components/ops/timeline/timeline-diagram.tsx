import { useId } from 'react';
import styles from './timeline.module.css';
import { laneTitle, type TimelineStep } from './timeline-model.ts';

const LANE_WIDTH = 170;
const HEADER = 46;
const ROW = 40;
const PAD_BOTTOM = 24;
const LABEL_MAX = 30;

function shorten(text: string): string {
  return text.length > LABEL_MAX ? `${text.slice(0, LABEL_MAX - 1)}…` : text;
}

/**
 * The payment's life as a sequence diagram: one vertical lane per process, time going down,
 * an arrow per call (from the caller's lane to the callee's) and a mark for what happened
 * within one process. Drawn at a fixed width per lane: on a phone its container scrolls
 * sideways. The picture is one `img` with a summary; the table beside it carries every step
 * as text for screen readers.
 */
export function TimelineDiagram({
  lanes,
  steps,
  summary,
}: {
  lanes: readonly string[];
  steps: readonly TimelineStep[];
  summary: string;
}) {
  const id = useId();
  const width = lanes.length * LANE_WIDTH;
  const height = HEADER + Math.max(steps.length, 1) * ROW + PAD_BOTTOM;
  const x = (lane: string) => (Math.max(lanes.indexOf(lane), 0) + 0.5) * LANE_WIDTH;
  return (
    // A scrollable region must be reachable by keyboard to scroll it on narrow screens.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: see above.
    <section className={styles.scroller} tabIndex={0} aria-label="Timeline picture">
      <svg
        className={styles.diagram}
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-labelledby={`${id}-title ${id}-desc`}
        data-testid="timeline-diagram"
      >
        <title id={`${id}-title`}>Timeline of the payment</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        <defs>
          {(['neutral', 'ok', 'warn', 'bad'] as const).map((tone) => (
            <marker
              key={tone}
              id={`${id}-arrow-${tone}`}
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="7"
              markerHeight="7"
              orient="auto-start-reverse"
            >
              <path d="M0,0 L10,5 L0,10 z" className={styles[`fill_${tone}`]} />
            </marker>
          ))}
        </defs>
        {lanes.map((lane) => (
          <g key={lane} data-lane={lane}>
            <rect
              x={x(lane) - LANE_WIDTH / 2 + 8}
              y={6}
              width={LANE_WIDTH - 16}
              height={28}
              rx={8}
              className={styles.laneHead}
            />
            <text x={x(lane)} y={25} textAnchor="middle" className={styles.laneTitle}>
              {laneTitle(lane)}
            </text>
            <line x1={x(lane)} x2={x(lane)} y1={34} y2={height - 8} className={styles.lifeline} />
          </g>
        ))}
        {steps.map((step, index) => {
          const y = HEADER + index * ROW + ROW / 2;
          const from = x(step.from);
          const to = x(step.to);
          const tone = styles[`tone_${step.tone}`];
          if (step.from === step.to) {
            return (
              <g key={step.seq} className={tone} data-kind="mark">
                <title>{step.description}</title>
                <circle cx={from} cy={y} r={6} className={styles.mark} />
                <text x={from + 11} y={y + 4} className={styles.stepLabel}>
                  {shorten(step.label)}
                </text>
              </g>
            );
          }
          const direction = to > from ? 1 : -1;
          return (
            <g key={step.seq} className={tone} data-kind="call">
              <title>{step.description}</title>
              <line
                x1={from + direction * 6}
                x2={to - direction * 8}
                y1={y + 6}
                y2={y + 6}
                className={styles.arrow}
                markerEnd={`url(#${id}-arrow-${step.tone})`}
              />
              <text x={(from + to) / 2} y={y} textAnchor="middle" className={styles.stepLabel}>
                {shorten(step.label)}
              </text>
            </g>
          );
        })}
      </svg>
    </section>
  );
}
