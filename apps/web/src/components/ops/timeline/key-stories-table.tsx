import { Badge, Time } from '../ops-table.tsx';
import type { KeyStory } from './key-stories.ts';
import styles from './timeline.module.css';

/**
 * Per idempotency key, every request it answered: the first execution, the replays, the 409s
 * (the first still running) and the 422s (the key reused for another request).
 */
export function KeyStoriesTable({ stories }: { stories: readonly KeyStory[] }) {
  if (stories.length === 0) return <p className="muted">No request with a key recorded yet.</p>;
  return (
    <div className="scroll">
      <table className="table" data-testid="key-stories">
        <caption className={styles.caption}>Each key's requests, oldest first</caption>
        <thead>
          <tr>
            <th scope="col">Idempotency-Key</th>
            <th scope="col">Action</th>
            <th scope="col">Requests, as answered</th>
          </tr>
        </thead>
        <tbody>
          {stories.map((story) => (
            <tr key={story.key} data-key={story.key}>
              <td>
                <code className="small">{story.key}</code>
              </td>
              <td>{story.action}</td>
              <td>
                <ol className={styles.requests}>
                  {story.requests.map((request) => (
                    <li key={request.seq}>
                      <Badge value={request.answer} /> <Time iso={request.at} />
                    </li>
                  ))}
                </ol>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
