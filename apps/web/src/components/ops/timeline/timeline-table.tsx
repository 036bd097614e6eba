import { Time } from '../ops-table.tsx';
import styles from './timeline.module.css';
import { laneTitle, type TimelineStep } from './timeline-model.ts';

/** Every step of the picture as text: who, to whom, what, when. The screen reader's view. */
export function TimelineTable({ steps }: { steps: readonly TimelineStep[] }) {
  return (
    <div className="scroll">
      <table className="table" data-testid="timeline-table">
        <caption className={styles.caption}>Every recorded event, oldest first</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Time</th>
            <th scope="col">From</th>
            <th scope="col">To</th>
            <th scope="col">What happened</th>
          </tr>
        </thead>
        <tbody>
          {steps.map((step, index) => (
            <tr key={step.key} className={styles[`row_${step.tone}`]} data-marker={step.marker}>
              <td>{index + 1}</td>
              <td>
                <Time iso={step.at} />
              </td>
              <td>{step.from ? laneTitle(step.from) : '—'}</td>
              <td>{step.to === step.from ? '—' : laneTitle(step.to)}</td>
              <td>{step.description}</td>
            </tr>
          ))}
          {steps.length === 0 ? (
            <tr>
              <td colSpan={5} className="muted">
                No events recorded for this payment.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </div>
  );
}
