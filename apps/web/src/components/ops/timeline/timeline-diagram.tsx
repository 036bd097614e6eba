import { useId } from 'react';
import styles from './timeline.module.css';
import { laneTitle, type TimelineStep } from './timeline-model.ts';

const LANE_WIDTH = 180;
const HEADER = 46;
const ROW = 44;
const PAD_BOTTOM = 24;
/** Average width of one character of a 12 px label, to fit labels without measuring. */
const CHAR_PX = 6.8;
/** Room a label leaves at each end of its arrow, so it never runs over the arrowhead. */
const ARROW_CLEARANCE = 14;

/**
 * A label as at most two lines of at most `maxChars` characters, broken between words; only
 * what still does not fit ends in "…" (the full text is in the tooltip and the table).
 */
export function labelLines(text: string, maxChars: number): string[] {
  const max = Math.max(maxChars, 8);
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (next.length <= max) {
      line = next;
      continue;
    }
    if (line) lines.push(line);
    line = word;
  }
  if (line) lines.push(line);
  const [first = '', second, ...rest] = lines.map((l) =>
    l.length > max ? `${l.slice(0, max - 1)}…` : l,
  );
  if (second === undefined) return [first];
  const last = rest.length > 0 ? `${second.slice(0, max - 1)}…` : second;
  return [first, last];
}

/** A label's lines, stacked upwards so the last line sits at `y`. */
function Label({
  lines,
  x,
  y,
  anchor,
  className,
}: {
  lines: readonly string[];
  x: number;
  y: number;
  anchor: 'start' | 'middle' | 'end';
  className?: string;
}) {
  return (
    <text x={x} y={y} textAnchor={anchor} className={`${styles.stepLabel} ${className ?? ''}`}>
      {lines.map((line, index) => (
        <tspan key={line} x={x} dy={index === 0 ? -(lines.length - 1) * 14 : 14}>
          {line}
        </tspan>
      ))}
    </text>
  );
}

/**
 * The payment's life as a sequence diagram, one lane per process run, time going down. The
 * picture is one `img` with a summary; the table beside it carries every step as text for screen
 * readers.
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
  // A dot's label reads away from the picture's edge: rightwards on the left half.
  const onRightHalf = (lane: string) => lanes.indexOf(lane) >= lanes.length / 2;
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
          const y = HEADER + index * ROW + ROW / 2 + 4;
          const tone = styles[`tone_${step.tone}`];
          if (step.marker === 'gap') {
            return (
              <g key={step.key} className={styles.gap} data-kind="gap">
                <title>{step.description}</title>
                <rect x={0} y={y - 16} width={width} height={24} className={styles.gapBand} />
                <Label
                  lines={[step.label]}
                  x={width / 2}
                  y={y}
                  anchor="middle"
                  className={styles.gapLabel}
                />
              </g>
            );
          }
          const from = x(step.from);
          const to = x(step.to);
          if (step.from === step.to) {
            const right = onRightHalf(step.from);
            const lines = labelLines(step.label, Math.floor((LANE_WIDTH * 1.5) / CHAR_PX));
            return (
              <g key={step.key} className={tone} data-kind={step.marker ?? 'mark'}>
                <title>{step.description}</title>
                {step.marker === 'lost' ? (
                  <path
                    d={`M${from - 6},${y - 10} l12,12 m0,-12 l-12,12`}
                    className={styles.cross}
                  />
                ) : (
                  <circle cx={from} cy={y - 4} r={6} className={styles.mark} />
                )}
                <Label
                  lines={lines}
                  x={right ? from - 12 : from + 12}
                  y={y}
                  anchor={right ? 'end' : 'start'}
                />
              </g>
            );
          }
          const direction = to > from ? 1 : -1;
          const end = to - direction * 8;
          const room = Math.abs(to - from) - 2 * ARROW_CLEARANCE;
          const lines = labelLines(step.label, Math.floor(room / CHAR_PX));
          // A broken call has no arrowhead; nor has a held one: its answer never came back.
          const broken = step.marker === 'fault' || step.marker === 'held';
          return (
            <g key={step.key} className={tone} data-kind={step.marker ?? 'call'}>
              <title>{step.description}</title>
              <line
                x1={from + direction * 6}
                x2={end}
                y1={y + 8}
                y2={y + 8}
                className={broken ? styles.brokenArrow : styles.arrow}
                markerEnd={broken ? undefined : `url(#${id}-arrow-${step.tone})`}
              />
              {step.marker === 'fault' ? (
                <path d={`M${end - 5},${y + 3} l10,10 m0,-10 l-10,10`} className={styles.cross} />
              ) : null}
              <Label lines={lines} x={(from + to) / 2} y={y} anchor="middle" />
            </g>
          );
        })}
      </svg>
    </section>
  );
}
